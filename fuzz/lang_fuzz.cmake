# The .lg front end fuzz target (parse + check + lower); corpus in fuzz/corpus/lang_fuzz/.
lg_add_fuzzer(lang_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/lang_fuzz.cpp LIBS lg_lang)
