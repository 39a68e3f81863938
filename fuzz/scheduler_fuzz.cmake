# Scheduler fuzz target (see scheduler_fuzz.cpp) over tests/common/pool_lane.h's hash lane; seeds
# and kept crashers live in corpus/scheduler_fuzz/.
lg_add_fuzzer(scheduler_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/scheduler_fuzz.cpp LIBS lg_runtime lg_ir)
target_include_directories(scheduler_fuzz_replay PRIVATE ${CMAKE_SOURCE_DIR}/tests)
if(TARGET scheduler_fuzz)
  target_include_directories(scheduler_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/tests)
endif()
