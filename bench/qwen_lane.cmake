# lg-bench: the `lg` front end with only the `bench` subcommand linked (src/cli/main.cpp +
# cmd_bench.cpp + a lane factory that knows the hand-written lane only). Same code as `lg bench`;
# it exists so the GPU machine can be sent a binary without the CPU lane's OpenBLAS (36 MB of the
# 64 MB upload limit).
if(LG_HAVE_CUDA AND TARGET lg_lane_qwen)
  add_executable(lg-bench ${CMAKE_SOURCE_DIR}/src/cli/main.cpp ${CMAKE_SOURCE_DIR}/src/cli/cmd_bench.cpp
                 ${CMAKE_SOURCE_DIR}/src/lanes/factory.cpp)
  target_link_libraries(lg-bench PRIVATE lg_lane_qwen lg_cuda lg_model lg_support CLI11::CLI11 fmt::fmt lg_warnings)
  target_compile_definitions(lg-bench PRIVATE LG_HAVE_LG_LANE_QWEN=1)
endif()
