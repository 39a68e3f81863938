#include "lang/program.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "lang/lexer.h"
#include "lang/parser.h"
#include "support/did_you_mean.h"

namespace lg::lang {
namespace {

/// Visits `root` and its subexpressions in pre-order (a node, then its args left to right) with an
/// explicit stack: a long `a + b + ...` is a tree as deep as it is long.
template <class F>
void preorder(const Expr& root, F&& visit) {
  std::vector<const Expr*> todo{&root};
  while (!todo.empty()) {
    const Expr* e = todo.back();
    todo.pop_back();
    size_t first = visit(*e);  // visit returns the first arg to descend into
    for (size_t k = e->args.size(); k-- > first;)
      if (e->args[k]) todo.push_back(e->args[k].get());
  }
}

void collect_calls(const Expr& e, std::vector<const Expr*>& out) {
  preorder(e, [&](const Expr& x) -> size_t {
    if (x.kind == ExprKind::Call && x.args[0]->kind == ExprKind::Name) out.push_back(&x);
    return 0;
  });
}

void collect_calls(const std::vector<Stmt>& body, std::vector<const Expr*>& out) {
  for (const auto& s : body) {
    if (s.target) collect_calls(*s.target, out);
    if (s.value) collect_calls(*s.value, out);
    collect_calls(s.body, out);
  }
}

/// Reports each call cycle once, at the call that closes it. Fns are inlined at every call, so a
/// cycle would inline forever.
void check_recursion(Program& p) {
  std::unordered_map<std::string, std::vector<const Expr*>> calls;
  for (auto& [name, fn] : p.fns) collect_calls(fn->body, calls[name]);
  std::unordered_map<std::string, int> color;  // 0 unvisited, 1 on the stack, 2 done
  // Depth-first over the call graph with an explicit stack (fn, next call to follow): a program
  // may chain thousands of fns.
  std::vector<std::string> stack;
  std::vector<size_t> next;
  auto visit = [&](const std::string& root) {
    color[root] = 1;
    stack.push_back(root);
    next.push_back(0);
    while (!stack.empty()) {
      const std::vector<const Expr*>& fcalls = calls[stack.back()];
      if (next.back() == fcalls.size()) {
        color[stack.back()] = 2;
        stack.pop_back();
        next.pop_back();
        continue;
      }
      const Expr* c = fcalls[next.back()++];
      const std::string& g = c->args[0]->text;
      if (!p.fns.count(g)) continue;
      if (color[g] == 1) {
        std::string chain;
        bool in = false;
        for (const auto& s : stack) {
          if (s == g) in = true;
          if (in) {
            chain += s + " -> ";
            p.recursive.insert(s);
          }
        }
        p.diags.error(c->args[0]->span, "recursive call: " + chain + g +
                                            " (fns are inlined at every call, so they cannot recurse)");
      } else if (color[g] == 0) {
        color[g] = 1;
        stack.push_back(g);
        next.push_back(0);
      }
    }
  };
  std::vector<std::string> names;
  for (auto& [name, fn] : p.fns) names.push_back(name);
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    const Span& x = p.fns[a]->span;
    const Span& y = p.fns[b]->span;
    return std::tie(x.file, x.line, x.col) < std::tie(y.file, y.line, y.col);
  });
  for (const auto& n : names)
    if (color[n] == 0) visit(n);
}

/// Name resolution inside fn bodies, done once for every fn (called or not); type and shape
/// checks need the arguments and happen where the fn is inlined. The messages equal the
/// inliner's, so a mistake found both ways is reported once.
class FnNameCheck {
 public:
  FnNameCheck(Program& p, const FnDecl& fn) : p_(p), fn_(fn) {
    if (p.model)
      for (const Decl& d : p.model->decls) model_names_.insert(d.name);
  }
  void run() {
    for (const auto& prm : fn_.params) bound_.insert(prm);
    for (const Stmt& s : fn_.body) {
      if (s.kind == StmtKind::Write) {
        p_.diags.error(s.span, "fn '" + fn_.name + "' writes state: fns are pure, write state in forward");
        continue;
      }
      if (s.kind == StmtKind::For) {
        p_.diags.error(s.span, "'for' is only allowed in forward, not in fn '" + fn_.name + "'");
        continue;
      }
      if (s.value) expr(*s.value);
      if (s.kind == StmtKind::Let) bound_.insert(s.name);
      for (const auto& n : s.names) bound_.insert(n);
    }
  }

 private:
  void expr(const Expr& root) {
    preorder(root, [&](const Expr& e) -> size_t {
      if (e.kind == ExprKind::Name) {
        name(e);
        return e.args.size();
      }
      if (e.kind == ExprKind::Call && e.args[0]->kind == ExprKind::Name) {
        const std::string& f = e.args[0]->text;
        if (!bound_.count(f) && !p_.fns.count(f) && !is_primitive(f) && !model_names_.count(f)) {
          p_.diags.error(e.args[0]->span, "unknown function '" + f + "'" + did_you_mean(f, p_.function_names()));
        }
        return 1;
      }
      return 0;
    });
  }
  void name(const Expr& e) {
    const std::string& n = e.text;
    static const std::unordered_set<std::string> dtypes = {"bf16", "f16", "f32", "i32", "bool"};
    if (bound_.count(n) || dtypes.count(n)) return;
    if (model_names_.count(n) || n == "S")
      p_.diags.error(e.span, "fn '" + fn_.name + "' uses '" + n + "' of the model: fns are pure, pass it as an argument");
    else if (!p_.fns.count(n) && !is_primitive(n) && !p_.main.dropped_before(n, e.span))  // Elaborator::unknown_name
      p_.diags.error(e.span, "unknown name '" + n + "'" +
                                 did_you_mean(n, std::vector<std::string>(bound_.begin(), bound_.end())));
  }
  Program& p_;
  const FnDecl& fn_;
  std::unordered_set<std::string> bound_;
  std::unordered_set<std::string> model_names_;
};

}  // namespace

std::unique_ptr<Program> load_program(std::string name, std::string text) {
  auto p = std::make_unique<Program>();
  // A UTF-8 byte-order mark (editors on Windows write one) is dropped, as Python drops it: the
  // lexer and the quoted lines then count the same columns.
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
  // A NUL byte is no text a person wrote (a binary, a file of zeros): one error for the file, not
  // one a stray byte, each quoting a line of escapes.
  const size_t nul = text.find('\0'), bytes = text.size();
  int32_t main_file = p->sources.add(std::move(name), std::move(text));
  int32_t prelude_file = p->sources.add("<prelude>", std::string(prelude_source()));
  if (bytes > kMaxProgramBytes && nul == std::string::npos) {
    p->diags.error({main_file, 1, 1, 1, 2},
                   fmt::format("the program is {} bytes; lanegraph reads .lg programs of at most {} MiB", bytes,
                               kMaxProgramBytes >> 20));
    p->syntax_errors = p->diags.count();
    return p;
  }
  if (nul != std::string::npos) {
    const SourceFile& f = p->sources.file(main_file);
    const auto line = static_cast<int32_t>(std::upper_bound(f.line_starts.begin(), f.line_starts.end(), nul) -
                                           f.line_starts.begin());
    const auto col = static_cast<int32_t>(nul - f.line_starts[static_cast<size_t>(line) - 1]) + 1;
    p->diags.error({main_file, line, col, line, col + 1}, "not a text file: a NUL byte (0x00) here; a .lg program is UTF-8 text");
    p->syntax_errors = p->diags.count();
    return p;
  }
  p->main = parse(lex(p->sources, main_file, p->diags), p->diags);
  p->prelude = parse(lex(p->sources, prelude_file, p->diags), p->diags);

  p->syntax_errors = p->diags.count();
  for (const auto& f : p->prelude.fns) p->fns[f.name] = &f;
  std::unordered_set<std::string> seen;
  for (const auto& f : p->main.fns) {
    if (is_primitive(f.name)) {
      p->diags.error(f.span, "fn '" + f.name + "' redefines a primitive");
      continue;
    }
    if (!seen.insert(f.name).second) {
      p->diags.error(f.span, "fn '" + f.name + "' is defined twice");
      continue;
    }
    p->fns[f.name] = &f;  // a file's fn shadows the prelude's of the same name
  }
  for (auto& [fname, fn] : p->fns) {
    std::unordered_set<std::string> params;
    for (size_t k = 0; k < fn->params.size(); ++k)
      if (!params.insert(fn->params[k]).second)
        p->diags.error(fn->param_spans[k], "parameter '" + fn->params[k] + "' of fn '" + fname + "' appears twice");
  }
  check_recursion(*p);

  if (!p->main.models.empty()) p->model = &p->main.models[0];
  for (const auto& f : p->main.fns) FnNameCheck(*p, f).run();
  if (p->main.models.empty()) {
    Span end{main_file, static_cast<int32_t>(p->sources.file(main_file).line_starts.size()), 1, 0, 0};
    if (!p->diags.has_errors()) p->diags.error(end, "expected a `model` block, found none in the file");
  } else {
    p->model = &p->main.models[0];
    for (size_t k = 1; k < p->main.models.size(); ++k)
      p->diags.error(p->main.models[k].span, "a file holds one model; this is a second one");
    if (!p->model->forward.present)
      p->diags.error(p->model->span, "model '" + p->model->name + "' has no forward");
  }
  return p;
}

}  // namespace lg::lang
