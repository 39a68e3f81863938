# draw_bench: the host's sampled draw over a Qwen-size logits row (plain timers; see draw_bench.cpp).
add_executable(draw_bench ${CMAKE_CURRENT_SOURCE_DIR}/draw_bench.cpp)
target_link_libraries(draw_bench PRIVATE lg_runtime lg_warnings)
