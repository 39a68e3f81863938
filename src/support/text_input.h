// Reading a text input whole (an .lg program, config.json and the model directory's other small
// JSON files, a messages, prompt, golden or requests file), with a size cap: without one,
// `lg check /dev/zero`, `--config /dev/zero` or `--messages /dev/zero` read until memory ran out.
// Not for the weights (safetensors, read by their headers' sizes) or tokenizer.json (33 MB for
// Gemma 3, and vocabularies grow): those are read by their own loaders, uncapped.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <istream>
#include <string>

namespace lg {

/// The most bytes read of one text input: 64 MiB, far above any real one (the largest in the
/// fixtures, Gemma 3's tokenizer_config.json, is 1.1 MB), and reached in well under a second
/// from /dev/zero.
inline constexpr size_t kMaxTextInputBytes = size_t{64} << 20;

/// Opens `path` to read, binary. lg::Error says which way it failed, each differently: "PATH: no
/// such WHAT (it does not exist)", "PATH: is a directory, not a WHAT" (a directory opens as a
/// stream that reads nothing, which would pass for an empty file), "PATH: is a symbolic link to
/// a missing file", or "PATH: cannot read the WHAT: REASON" (the system's: permission denied, ...).
/// `what` names the file's role: "requests file", "prompt file".
std::ifstream open_text_input(const std::filesystem::path& path, const std::string& what);

/// The rest of `in`, at most `cap` bytes; one byte more is lg::Error "NAME: larger than 64 MiB
/// ...". Reading stops at the cap, so an endless stream ends there. A read error is left in `in`'s
/// state for the caller.
std::string read_text_input(std::istream& in, const std::string& name, size_t cap = kMaxTextInputBytes);

/// std::getline for a file of lines (a requests file): false at the end; a line longer than `cap`
/// is lg::Error "NAME: line N is larger than 64 MiB ..." (`line` is its 1-based number), `out` then
/// holding the line's first `cap` bytes.
bool getline_capped(std::istream& in, std::string& out, const std::string& name, size_t line,
                    size_t cap = kMaxTextInputBytes);

/// After getline_capped refused a line past its cap: reads on to that line's end without keeping
/// it, at most `cap` more bytes. True when the line ended (a newline, or the end of `in`), so the
/// next getline_capped reads the line after it; false when `cap` bytes went by without an end
/// (an endless stream: `/dev/zero`).
bool skip_line_capped(std::istream& in, size_t cap = kMaxTextInputBytes);

}  // namespace lg
