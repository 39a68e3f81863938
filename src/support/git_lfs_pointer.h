// Git LFS pointer files. A Hugging Face repository cloned without Git LFS (git-lfs not installed,
// or GIT_LFS_SKIP_SMUDGE=1) holds, in place of each large file (the safetensors, often
// tokenizer.json), a text file of about 130 bytes starting "version
// https://git-lfs.github.com/spec/v1". Read as safetensors, its first 8 bytes made a header length
// of 2.3e18 ("not a safetensors file or corrupt"); as JSON, a parse error at its first byte.
// Neither said what the file is or what to do, so the readers say both.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lg {

/// Whether a file starting with `head` (its first bytes; 40 or more to tell) is a Git LFS pointer.
inline bool is_git_lfs_pointer(std::string_view head) {
  return head.starts_with("version https://git-lfs.github.com/spec/");
}

/// The error for the pointer `file` of `size` bytes found where its content was expected.
inline std::string git_lfs_pointer_error(const std::string& file, uint64_t size) {
  return file + ": a Git LFS pointer (" + std::to_string(size) +
         " bytes), not the file it stands for: the model repository was cloned without Git LFS; fetch the files "
         "(`git lfs install && git lfs pull` in it, or `huggingface-cli download`)";
}

}  // namespace lg
