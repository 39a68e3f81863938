// `lg tokenize --model DIR [--ids] [--special] TEXT` and `lg detokenize --model DIR
// [--skip-special-tokens] IDS...`: the model directory's tokenizer.json (and tokenizer_config.json)
// from the command line: byte-level BPE (Qwen, Llama 3) or SentencePiece-style BPE (Llama 2,
// Mistral, Gemma). TEXT "-" reads stdin.
#include <cstdint>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/token_id_args.h"
#include "support/error.h"
#include "support/text_input.h"
#include "tokenizer/tokenizer.h"

namespace {

struct TokenizeArgs {
  std::string model;
  std::string text;
  bool ids_only = false;
  bool special = false;
};

std::string read_stdin() { return lg::read_text_input(std::cin, "standard input"); }

lg::tokenizer::Tokenizer load(const std::string& model_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(model_dir, ec))
    throw lg::Error(model_dir + ": not a model directory (" +
                    (std::filesystem::exists(model_dir, ec) ? "a file" : "no such directory") +
                    "; -m names the folder holding tokenizer.json)");
  return lg::tokenizer::Tokenizer::from_file(std::filesystem::path(model_dir) / "tokenizer.json");
}

LG_COMMAND("tokenize", [](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<TokenizeArgs>();
  auto* sub = app.add_subcommand("tokenize", "Encode text with a model directory's tokenizer.json");
  sub->add_option("--model,-m", args->model, "Hugging Face model directory (holds tokenizer.json)")->required();
  sub->add_flag("--ids", args->ids_only, "print only the ids, space-separated");
  sub->add_flag("--special", args->special,
                "add the special tokens the model expects around a prompt (BOS), as lg run does");
  sub->add_option("text", args->text, "text to encode, or - to read stdin (text starting with '-': put -- before it)")
      ->required();
  return [args] {
    const auto tok = load(args->model);
    const std::string text = args->text == "-" ? read_stdin() : args->text;
    const auto ids = args->special ? tok.encode_with_special_tokens(text) : tok.encode(text);
    if (args->ids_only) {
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
      std::cout << "\n";
      return 0;
    }
    // One line per token: id, token in tokenizer.json form, and what it decodes to on its own
    // (as transformers' decode([id]): a SentencePiece piece loses its leading space there too),
    // with newlines, tabs, carriage returns and backslashes escaped so each token stays one row.
    auto escaped = [](const std::string& s) {
      std::string out;
      for (const char c : s) {
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c == '\\') out += "\\\\";
        else out += c;
      }
      return out;
    };
    for (const int32_t id : ids)
      std::cout << id << "\t" << tok.id_to_token(id).value_or("?") << "\t" << escaped(tok.decode(std::vector<int32_t>{id}))
                << "\n";
    std::cout << ids.size() << (ids.size() == 1 ? " token\n" : " tokens\n");
    return 0;
  };
});

struct DetokenizeArgs {
  std::string model;
  std::vector<std::string> ids;
  bool skip_special_tokens = false;  // off, as HF's decode(ids) defaults to skip_special_tokens=False
  bool no_newline = false;           // --no-newline: the text alone
};

LG_COMMAND("detokenize", [](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<DetokenizeArgs>();
  auto* sub = app.add_subcommand("detokenize", "Decode token ids with a model directory's tokenizer.json");
  sub->add_option("--model,-m", args->model, "Hugging Face model directory (holds tokenizer.json)")->required();
  sub->add_flag("--no-newline", args->no_newline,
                "print the text alone, byte for byte (by default a newline follows it, so a text's own last "
                "newline reads as two)");
  sub->add_flag("--skip-special-tokens", args->skip_special_tokens,
                "leave out the special tokens (tokenizer.json's added tokens marked special: <|endoftext|>, "
                "<|im_start|>, ...), as lg run and lg serve show generated text; default: shown, as HF's decode");
  sub->add_option("ids", args->ids,
                  "token ids: separate arguments (5 12 7), or comma-separated in one (5,12,7); plain decimal digits "
                  "only; - reads them from stdin")
      ->required();
  return [args] {
    const auto tok = load(args->model);
    // `-`: the ids from standard input, split at spaces and newlines (`lg run --prompt-ids ... |
    // lg detokenize -m DIR -`). None decode to "", as HF's decode([]) (a pipe that carried no
    // ids is not an error).
    if (args->ids == std::vector<std::string>{"-"}) {
      std::istringstream in(read_stdin());
      args->ids.clear();
      for (std::string word; in >> word;) args->ids.push_back(word);
      if (args->ids.empty()) {
        std::cout << (args->no_newline ? "" : "\n");
        return 0;
      }
    }
    // The library skips ids without a token, as the reference does; on the command line an
    // unknown id is more likely a typo, so it is an error.
    const std::vector<int32_t> ids =
        lg::cli::parse_token_id_args(args->ids, "detokenize", [&tok](int64_t id, const std::string& item) {
          if (id < 0 || !tok.id_to_token(static_cast<int32_t>(id)))
            throw lg::Error("detokenize: id " + item + " has no token (the tokenizer has ids 0.." +
                            std::to_string(tok.vocab_size() - 1) +
                            "; a model's LM head may have more rows, padding whose ids lg run and lg serve decode to "
                            "nothing)");
        });
    std::cout << tok.decode(ids, args->skip_special_tokens) << (args->no_newline ? "" : "\n");
    return 0;
  };
});

}  // namespace
