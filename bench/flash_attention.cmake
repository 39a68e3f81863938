# flash-attention-bench: the tensor-core prefill attention (src/kernels/flash_attention.cuh via
# launch_attention_prefill_tc) timed against the lane's CUDA-core launch_attention_ragged.
if(LG_HAVE_CUDA AND TARGET lg_lane_qwen)
  add_executable(flash-attention-bench ${CMAKE_CURRENT_SOURCE_DIR}/flash_attention_bench.cpp)
  target_link_libraries(flash-attention-bench PRIVATE lg_lane_qwen lg_cuda lg_support lg_warnings)
endif()
