# The chat-template renderer that lanegraph runs as a child process (src/chat/jinja_renderer.cpp
# embeds this file and starts it as `python3 -c SOURCE ADDRESS_SPACE_BYTES`).
#
# It renders a model's chat_template with Jinja2 itself, in the environment Hugging Face
# transformers builds for apply_chat_template (utils/chat_template_utils.py, transformers 5):
# an ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loopcontrols extension
# and a `{% generation %}` block tag (transformers' assistant-mask tracker; without masks it
# renders its body), the filter `tojson` replaced by json.dumps with ensure_ascii=False (Jinja's
# own escapes HTML characters), and the globals raise_exception (raises TemplateError) and
# strftime_now (local time). Templates are compiled once each (an LRU cache, as transformers).
#
# Protocol, one JSON object per line each way (UTF-8; replies are ASCII, ensure_ascii=True):
#   first, unasked: {"ready": true, "jinja2": VERSION, "python": VERSION}
#                or {"ready": false, "message": WHY}, then exit
#   request:  {"template": SOURCE, "variables": {NAME: VALUE, ...}, "max_bytes": N}
#             (with "compile_only": true, only compiles: a syntax check)
#   reply:    {"ok": true, "text": RENDERED}
#          or {"ok": false, "kind": "syntax"|"template"|"too_large", "message": WHY}
# The variables are passed to render() as they are; the caller sets messages, tools, documents,
# add_generation_prompt and the special tokens as apply_chat_template does.
import sys

# `python3 -c` puts the working directory first on sys.path: a jinja2.py there must not win.
sys.path[:] = [p for p in sys.path if p not in ("", ".")]

import json  # noqa: E402

_out = sys.stdout.buffer


def _reply(obj):
    _out.write(json.dumps(obj, ensure_ascii=True).encode("ascii") + b"\n")
    _out.flush()


# A bound on the address space, so that a template building a huge string ('x' * 10**10) ends
# in a MemoryError reported for that request instead of exhausting the machine.
_limit = 0
try:
    import resource

    _limit = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    if _limit > 0:
        resource.setrlimit(resource.RLIMIT_AS, (_limit, _limit))
except (ImportError, ValueError, OSError):
    pass

try:
    import platform
    from datetime import datetime
    from functools import lru_cache

    import jinja2
    import jinja2.ext
    import jinja2.nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError as e:
    _reply({"ready": False,
            "message": "%s cannot import jinja2 (%s): install Jinja2 for it (Debian/Ubuntu: apt-get install "
                       "python3-jinja2), or point LG_PYTHON at a Python that has it" % (sys.executable, e)})
    sys.exit(0)


def _version_tuple(v):
    out = []
    for part in v.split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


if _version_tuple(jinja2.__version__) < (3, 1):
    # transformers requires 3.1 for apply_chat_template; older versions differ in details.
    _reply({"ready": False, "message": "%s has Jinja2 %s; chat templates need Jinja2 >= 3.1 (as transformers)"
                                        % (sys.executable, jinja2.__version__)})
    sys.exit(0)


class _GenerationBlock(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}`: marks the assistant's text for transformers'
    return_assistant_tokens_mask. lanegraph renders prompts only, so the block is its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt):
    return datetime.now().strftime(fmt)


@lru_cache(maxsize=16)
def _compile(source):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[_GenerationBlock, jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env.from_string(source)


class _TooLarge(Exception):
    pass


def _render(req):
    try:
        template = _compile(req["template"])
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"ok": False, "kind": "syntax", "message": "line %s: %s" % (e.lineno, e.message)}
    if req.get("compile_only"):
        return {"ok": True, "text": ""}
    max_bytes = int(req.get("max_bytes", 0))
    # generate() yields the output piece by piece, so a template that loops out a huge text is
    # stopped at the bound (characters <= UTF-8 bytes) instead of after building all of it.
    pieces, chars = [], 0
    try:
        for piece in template.generate(**req["variables"]):
            chars += len(piece)
            if max_bytes and chars > max_bytes:
                raise _TooLarge()
            pieces.append(piece)
        text = "".join(pieces)
        if len(text.encode("utf-8")) > max_bytes > 0:
            raise _TooLarge()
    except _TooLarge:
        pieces = None
        return {"ok": False, "kind": "too_large", "message": "the rendered prompt is larger than %d bytes" % max_bytes}
    except MemoryError:
        # A value the template builds on the way (`"x" * 3000000000`) can pass the renderer's
        # address-space limit whatever the size of what it prints: say that, not "larger than".
        pieces = None
        limit = " (the renderer's limit is %d MiB)" % (_limit >> 20) if _limit > 0 else ""
        return {"ok": False, "kind": "too_large", "message": "the template ran out of memory building a value" + limit}
    except jinja2.exceptions.TemplateError as e:
        # raise_exception(...) lands here with the template's own message.
        return {"ok": False, "kind": "template", "message": str(e)}
    except UnicodeEncodeError:
        return {"ok": False, "kind": "template", "message": "the template produced text that is not valid Unicode "
                                                            "(a lone surrogate such as '\\ud800')"}
    except RecursionError:
        return {"ok": False, "kind": "template", "message": "the template recursed too deeply"}
    except Exception as e:  # noqa: BLE001 - a template fails in many ways (TypeError, KeyError, ...)
        return {"ok": False, "kind": "template", "message": "%s: %s" % (type(e).__name__, e)}
    return {"ok": True, "text": text}


def _main():
    _reply({"ready": True, "jinja2": jinja2.__version__, "python": platform.python_version()})
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return  # the parent closed the pipe
        try:
            req = json.loads(line.decode("utf-8"))
            reply = _render(req)
        except MemoryError:
            reply = {"ok": False, "kind": "too_large", "message": "the request ran out of memory"}
        except Exception as e:  # noqa: BLE001 - a malformed request; the protocol goes on
            reply = {"ok": False, "kind": "template", "message": "bad render request: %s: %s" % (type(e).__name__, e)}
        _reply(reply)


_main()
