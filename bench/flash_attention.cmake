# flash-attention-bench: the tensor-core prefill attention (src/kernels/flash_attention.cuh via
# launch_attention_prefill_tc) timed against the lane's CUDA-core launch_attention_prefill. Compiles
# the two launcher files itself rather than linking all of lg_lane_qwen (a smaller binary to send).
if(LG_HAVE_CUDA AND TARGET lg_cuda)
  add_executable(flash-attention-bench ${CMAKE_CURRENT_SOURCE_DIR}/flash_attention_bench.cpp
                 ${CMAKE_SOURCE_DIR}/src/lanes/qwen/kernels.cu ${CMAKE_SOURCE_DIR}/src/lanes/qwen/prefill_attention.cu)
  target_include_directories(flash-attention-bench PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(flash-attention-bench PRIVATE lg_cuda lg_support lg_warnings)
  set_target_properties(flash-attention-bench PROPERTIES CUDA_STANDARD 17)
endif()
