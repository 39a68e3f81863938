# Tokenizer fuzz target (see tokenizer_fuzz.cpp); kept crashers live in corpus/tokenizer_fuzz/.
lg_add_fuzzer(tokenizer_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_fuzz.cpp LIBS lg_tokenizer)
foreach(t tokenizer_fuzz_replay tokenizer_fuzz)
  if(TARGET ${t})
    target_compile_definitions(${t} PRIVATE
      LG_TOKENIZER_JSON_DEFAULT="${CMAKE_SOURCE_DIR}/models/qwen3-pycode-22m/tokenizer.json")
  endif()
endforeach()
