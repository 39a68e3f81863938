# qwen-kernels-lab: the hand-written lane's decode kernels timed alone (bench/qwen_lane.md, the
# "kernel lab"); it was a disabled test that checked nothing.
if(LG_HAVE_CUDA AND TARGET lg_lane_qwen)
  add_executable(qwen-kernels-lab ${CMAKE_CURRENT_SOURCE_DIR}/qwen_kernels_lab.cpp)
  target_link_libraries(qwen-kernels-lab PRIVATE lg_lane_qwen lg_cuda lg_support lg_warnings)
endif()
