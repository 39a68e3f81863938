# safetensors header/data parser (src/model): replayed by ctest; libFuzzer binary with LG_FUZZ.
if(TARGET lg_model)
  lg_add_fuzzer(safetensors_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/safetensors_fuzz.cpp LIBS lg_model)
endif()
