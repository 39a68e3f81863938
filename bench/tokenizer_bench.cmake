# tokenizer_bench: encode throughput of lg_tokenizer (plain timers; see tokenizer_bench.cpp).
add_executable(tokenizer_bench ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_bench.cpp)
target_link_libraries(tokenizer_bench PRIVATE lg_tokenizer lg_warnings)
target_compile_definitions(tokenizer_bench PRIVATE LG_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
