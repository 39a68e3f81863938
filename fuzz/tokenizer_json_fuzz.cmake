# tokenizer.json reader fuzz target (see tokenizer_json_fuzz.cpp); seeds and kept crashers live in
# corpus/tokenizer_json_fuzz/.
lg_add_fuzzer(tokenizer_json_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_json_fuzz.cpp LIBS lg_tokenizer)
