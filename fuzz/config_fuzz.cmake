# config.json / generation_config.json fuzz target (see config_fuzz.cpp); seeds and kept crashers
# live in corpus/config_fuzz/.
if(TARGET lg_model)
  lg_add_fuzzer(config_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/config_fuzz.cpp LIBS lg_model)
endif()
