# `lg batch` request line fuzz target (see batch_line_fuzz.cpp); seeds and kept crashers live in
# corpus/batch_line_fuzz/.
lg_add_fuzzer(batch_line_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/batch_line_fuzz.cpp LIBS lg_server_request fmt::fmt)
