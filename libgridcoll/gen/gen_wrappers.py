#!/usr/bin/env python3
"""Generate libgridcoll's fail-safe wrappers for communicator-taking MPI calls.

Usage: gen_wrappers.py MPI_H GRID_FUNCTIONS_TXT OUTPUT_C

Reads the MPI prototypes MPICH ships (MPI_H, plus mpi_proto.h and mpio.h
beside it, which mpi.h includes), and writes OUTPUT_C: for every function
`int MPI_Xxx(...)` (and `int MPIX_Xxx(...)`, e.g. MPIX_Comm_shrink) with at
least one parameter of type `MPI_Comm` taken by value (or an in-out
`MPI_Comm *`, see COMM_POINTER_INOUT), a wrapper with MPICH's exact
prototype (each communicator argument checked in order):

    int MPI_Send(const void *buf, ..., MPI_Comm comm)
    {
        GC_ENTER();
        if (gc_comm_is_grid(comm))
            return gc_unsupported(comm, "MPI_Send");
        GC_LEAVE();
        return PMPI_Send(buf, ..., comm);
    }

(GC_ENTER/GC_LEAVE: the library lock, gc_lock.h, held while the
registry is consulted, not during MPICH's call.)

except for the functions listed in GRID_FUNCTIONS_TXT (section
[HANDWRITTEN]: the runtime defines a grid version; section [PASSTHROUGH]:
semantics do not depend on the communicator's membership, so MPICH's own
symbol is used even on a grid communicator) and for SKIP below.

Fail-safe (docs/design/mpi-layer.md, "Calls not supported across sites"):
the script exits non-zero, writing nothing, if a declaration that mentions
MPI_Comm cannot be parsed or cannot be wrapped (non-int return, varargs, no
PMPI_ twin, hidden behind a preprocessor condition it cannot evaluate, a
function-like macro of the same name), so an MPICH upgrade cannot silently
leave a communicator-taking call running with site-local semantics.  It
also fails on a function taking an MPI_Group by value that is not
HANDWRITTEN: groups of grid communicators are handles MPICH never made.

Python 3 standard library only.
"""

import os
import re
import sys

# Communicator-taking functions that are deliberately neither wrapped nor
# listed in grid_functions.txt.
SKIP = {
    # Predefined attribute copy callback, declared in mpi_proto.h as
    # `int MPI_DUP_FN(MPI_Comm oldcomm, int keyval, ...)` but mpi.h makes the
    # name an object-like macro for MPIR_Dup_fn (so no MPI_DUP_FN symbol and
    # no PMPI twin exist).  It is not a call a program makes on a
    # communicator: MPICH calls it, through MPI_COMM_DUP_FN /
    # MPI_WIN_DUP_FN / MPI_TYPE_DUP_FN, while duplicating an object, and it
    # only copies the attribute value.  (MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN,
    # MPI_COMM_NULL_COPY_FN, ... are null function-pointer macros in MPICH
    # 4.0.2, not declarations; listed in case an MPICH declares them.)
    "MPI_DUP_FN": "predefined attribute copy callback (macro for MPIR_Dup_fn)",
    "MPI_NULL_COPY_FN": "predefined attribute copy callback",
    "MPI_NULL_DELETE_FN": "predefined attribute delete callback",
    "MPI_COMM_DUP_FN": "predefined attribute copy callback",
    "MPI_COMM_NULL_COPY_FN": "predefined attribute copy callback",
    "MPI_COMM_NULL_DELETE_FN": "predefined attribute delete callback",
    # gc_unsupported() reports through the communicator's error handler
    # with this call; a generated wrapper would call gc_unsupported() again
    # (endless recursion).  Invoking the handler attached to the handle is
    # a local action that does not depend on membership anyway.
    "MPI_Comm_call_errhandler": "gc_unsupported() reports through it",
}

# Functions whose only communicator parameters are pointers.  MPI_Comm *
# is usually an output (a new communicator, checked by nothing: the call
# creating it is what gets wrapped), but an MPI_Comm * that is read is as
# dangerous as a by-value one: MPI_Comm_free on a grid communicator would
# free its local part behind the runtime's back.  Every such function must
# be classified here, or the generator fails.
COMM_POINTER_INOUT = {
    # (function, parameter): *parameter is the communicator operated on
    "MPI_Comm_free": "comm",
    "MPI_Comm_disconnect": "comm",
}
COMM_POINTER_OUT_ONLY = {
    "MPI_Comm_get_parent",  # returns the parent intercommunicator
    "MPI_Comm_join",  # new intercommunicator over a socket
    "MPI_Comm_create_from_group",  # new communicator from an MPI_Group
    "MPI_Intercomm_create_from_groups",  # same, from two groups
}

# Header files followed when mpi.h includes them (others, e.g. mpicxx.h,
# are C++-only or not prototypes).
FOLLOW_INCLUDES = ("mpi_proto.h", "mpio.h")

# Macros that expand to attributes in prototypes; removed before parsing.
ATTR_RE = re.compile(r"\b(?:MPICH_ATTR_\w+|\w+_API_PUBLIC)\b")

C_TYPE_WORDS = {
    "const", "volatile", "restrict", "signed", "unsigned", "short", "long",
    "int", "char", "float", "double", "void", "_Bool", "struct", "enum",
    "union",
}


class GenError(Exception):
    pass


def strip_comments(text):
    """Remove /* */ and // comments, keeping newlines and string literals."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise GenError("unterminated comment")
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j + 2
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def eval_condition(expr, defines, func_macros=()):
    """Evaluate a #if expression; None when it is beyond this small
    evaluator (then declarations under it are treated as uncertain)."""

    def repl_defined(m):
        return " 1 " if m.group(1) in defines else " 0 "

    e = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)", repl_defined, expr.strip())
    e = re.sub(r"\bdefined\s+(\w+)", repl_defined, e)
    parts = []
    toks = re.findall(r"0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|[A-Za-z_]\w*"
                      r"|&&|\|\||[<>=!]=|[-+()<>!]|\S", e)
    for i, t in enumerate(toks):
        if re.fullmatch(r"0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*", t):
            parts.append(str(int(t.rstrip("uUlL"), 0)))
        elif re.fullmatch(r"[A-Za-z_]\w*", t):
            if t in func_macros or (i + 1 < len(toks) and toks[i + 1] == "("):
                return None  # function-like macro call: not evaluated
            val = defines.get(t)
            if val is None:
                parts.append("0")  # undefined identifiers are 0 in #if
                continue
            val = val.strip()
            if re.fullmatch(r"0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*", val):
                parts.append(str(int(val.rstrip("uUlL"), 0)))
            else:
                return None
        elif t == "&&":
            parts.append(" and ")
        elif t == "||":
            parts.append(" or ")
        elif t == "!":
            parts.append(" not ")
        elif t in ("(", ")", "<", ">", "<=", ">=", "==", "!=", "+", "-"):
            parts.append(t)
        else:
            return None
    try:
        return bool(eval(" ".join(parts), {"__builtins__": {}}, {}))
    except Exception:
        return None


class Preprocessor:
    """Just enough of the C preprocessor for MPICH's prototype headers:
    conditionals on macros defined in these headers, #define/#undef,
    following the includes of mpi_proto.h and mpio.h.  Produces a list of
    (text, certain) chunks of active code."""

    def __init__(self, directory):
        self.directory = directory
        # What the compiler predefines when it builds gc_wrappers.c (C11).
        self.defines = {"__STDC__": "1", "__STDC_VERSION__": "201112L"}
        self.func_macros = set()
        self.chunks = []
        self.seen = set()

    def run_file(self, path):
        real = os.path.realpath(path)
        if real in self.seen:
            return
        self.seen.add(real)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = strip_comments(f.read())
        text = re.sub(r"\\\n", " ", text)
        # stack entries: [active, certain, taken]
        stack = []
        buf = []

        def active():
            return all(s[0] for s in stack)

        def certain():
            return all(s[1] for s in stack)

        def flush():
            if buf:
                self.chunks.append(("\n".join(buf), certain(), path))
                buf.clear()

        for line in text.split("\n"):
            m = re.match(r"\s*#\s*(\w+)\s*(.*)$", line)
            if not m:
                if active():
                    buf.append(line)
                continue
            flush()
            d, rest = m.group(1), m.group(2).strip()
            if d in ("if", "ifdef", "ifndef"):
                if d == "ifdef":
                    val = rest.split()[0] in self.defines
                elif d == "ifndef":
                    val = rest.split()[0] not in self.defines
                else:
                    val = eval_condition(rest, self.defines, self.func_macros)
                if val is None:
                    stack.append([True, False, False])
                else:
                    stack.append([val, True, val])
            elif d == "elif":
                if not stack:
                    raise GenError("%s: #elif without #if" % path)
                top = stack[-1]
                if not top[1]:
                    top[0] = True
                elif top[2]:
                    top[0] = False
                else:
                    val = eval_condition(rest, self.defines, self.func_macros)
                    if val is None:
                        top[0], top[1] = True, False
                    else:
                        top[0] = top[2] = val
            elif d == "else":
                if not stack:
                    raise GenError("%s: #else without #if" % path)
                top = stack[-1]
                if top[1]:
                    top[0] = not top[2]
                    top[2] = True
                # uncertain stays active and uncertain
            elif d == "endif":
                if not stack:
                    raise GenError("%s: #endif without #if" % path)
                stack.pop()
            elif not active():
                continue
            elif d == "define":
                dm = re.match(r"(\w+)(\()?\s*(.*)$", rest)
                if dm:
                    if dm.group(2):
                        self.func_macros.add(dm.group(1))
                    else:
                        self.defines[dm.group(1)] = dm.group(3)
                        self.func_macros.discard(dm.group(1))
            elif d == "undef":
                name = rest.split()[0]
                self.defines.pop(name, None)
                self.func_macros.discard(name)
            elif d == "include":
                im = re.match(r'[<"]([^>"]+)[>"]', rest)
                if im and os.path.basename(im.group(1)) in FOLLOW_INCLUDES:
                    inc = os.path.join(self.directory,
                                       os.path.basename(im.group(1)))
                    if not os.path.exists(inc):
                        raise GenError("%s includes %s, not found beside it"
                                       % (path, inc))
                    self.run_file(inc)
        flush()
        if stack:
            raise GenError("%s: unterminated #if" % path)


def split_top(text, sep):
    """Split on `sep` outside (), [] and {}."""
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def strip_attributes(text):
    """Remove MPICH_ATTR_*(...) / *_API_PUBLIC attribute macros."""
    out = []
    pos = 0
    for m in ATTR_RE.finditer(text):
        if m.start() < pos:
            continue
        out.append(text[pos:m.start()])
        j = m.end()
        k = j
        while k < len(text) and text[k] in " \t\n":
            k += 1
        if k < len(text) and text[k] == "(":
            depth = 0
            while k < len(text):
                if text[k] == "(":
                    depth += 1
                elif text[k] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            j = k + 1
        pos = j
    out.append(text[pos:])
    return "".join(out)


def norm(s):
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"\s*\*\s*", " *", s)
    s = re.sub(r"\s*\[\s*", "[", s)
    s = re.sub(r"\s*\]", "]", s)
    s = re.sub(r"\(\s+", "(", s)
    s = re.sub(r"\s+\)", ")", s)
    return s.replace("* *", "**").replace("* (", "*(").strip()


class Param:
    def __init__(self, text, index):
        self.text = norm(text)
        self.index = index
        self.name = None
        self.type = None  # the declaration with the name removed
        self._parse()

    def _parse(self):
        t = self.text
        if t == "...":
            raise GenError("varargs")
        fp = re.match(r"^(.*?\(\s*\*+\s*)(\w+)(\s*\).*)$", t)
        if fp:  # function pointer: ret (*name)(args)
            self.name = fp.group(2)
            self.type = fp.group(1) + fp.group(3)
            self.decl = t
            return
        if "(" in t:
            raise GenError("unparsable parameter '%s'" % t)
        am = re.match(r"^([^\[]*?)((?:\[[^\]]*\])*)$", t)
        if not am:
            raise GenError("unparsable parameter '%s'" % t)
        head, arrays = am.group(1).strip(), am.group(2)
        words = re.findall(r"[A-Za-z_]\w*", head)
        if not words:
            raise GenError("unparsable parameter '%s'" % t)
        # Is the last identifier a name or part of the type?
        non_kw = [w for w in words if w not in C_TYPE_WORDS]
        last = words[-1]
        named = (not head.endswith("*") and last not in C_TYPE_WORDS
                 and (len(non_kw) >= 2
                      or any(w in C_TYPE_WORDS - {"const", "volatile",
                                                   "restrict", "struct",
                                                   "enum", "union"}
                             for w in words[:-1]))
                 and not (len(words) >= 2
                          and words[-2] in ("struct", "enum", "union")))
        if named and len(non_kw) > 2:
            raise GenError("unparsable parameter '%s'" % t)
        if named:
            self.name = last
            self.type = norm(head[: head.rfind(last)] + arrays)
            self.decl = t
        else:
            self.name = "gc_arg%d" % self.index
            self.type = norm(head + arrays)
            sep = "" if head.endswith("*") else " "
            self.decl = head + sep + self.name + arrays

    def base_type(self):
        return re.sub(r"\s+", " ", re.sub(r"\bconst\b", "", self.type)).strip()

    def is_comm_by_value(self):
        return self.base_type() == "MPI_Comm"

    def is_comm_pointer(self):
        """MPI_Comm behind pointers or arrays (not inside a function
        pointer type)."""
        return "(" not in self.type and re.fullmatch(
            r"MPI_Comm\s*[*\[].*", self.base_type()) is not None


class Proto:
    def __init__(self, ret, name, params_text, origin):
        self.ret = norm(ret)
        self.name = name
        self.origin = origin
        pt = params_text.strip()
        self.params = []
        self.error = None
        self.mentions_comm = re.search(r"\bMPI_Comm\b", pt) is not None
        try:
            if norm(pt) in ("void", ""):
                return
            for i, p in enumerate(split_top(pt, ",")):
                self.params.append(Param(p, i))
        except GenError as e:
            self.error = str(e)

    def comm_params(self):
        """Parameters to check: by-value communicators, and in-out
        MPI_Comm * from COMM_POINTER_INOUT (as expressions)."""
        checks = [p.name for p in self.params if p.is_comm_by_value()]
        inout = COMM_POINTER_INOUT.get(self.name)
        if inout is not None:
            checks.append("*" + inout)
        return checks

    def comm_pointer_params(self):
        return [p for p in self.params if p.is_comm_pointer()]

    def signature(self):
        if not self.params:
            return "%s %s(void)" % (self.ret, self.name)
        return "%s %s(%s)" % (self.ret, self.name,
                              ", ".join(p.decl for p in self.params))


DECL_RE = re.compile(
    r"^(?P<ret>(?:[A-Za-z_]\w*[\s*]+)+?)\**\s*(?P<name>[A-Za-z_]\w*)\s*"
    r"\((?P<params>.*)\)$", re.S)


def collect(pp):
    """Return {name: Proto} for MPI_/MPIX_/PMPI_/PMPIX_ functions, and the
    list of uncertain or unparsable declarations that mention MPI_Comm."""
    protos = {}
    problems = []
    for text, certain, origin in pp.chunks:
        text = strip_attributes(text)
        for stmt in split_top(text, ";"):
            s = stmt.strip()
            if not s:
                continue
            # A chunk can end inside a braced block ({...} split by a
            # directive); skip anything with braces (struct/enum bodies).
            if "{" in s or "}" in s or s.startswith("typedef") \
                    or s.startswith("extern \"C\""):
                continue
            s = re.sub(r"^extern\s+", "", s)
            m = DECL_RE.match(s)
            name_m = re.search(r"\b(P?MPIX?_\w+)\s*\(", s)
            if not m or "=" in s:
                if name_m and re.search(r"\bMPI_Comm\b", s):
                    problems.append("cannot parse declaration in %s: %s"
                                    % (origin, norm(s)))
                continue
            name = m.group("name")
            if not re.match(r"^P?MPIX?_", name):
                continue
            ret = m.group("ret") + s[m.end("ret"):m.start("name")]
            p = Proto(ret, name, m.group("params"), origin)
            if not certain:
                if p.mentions_comm:
                    problems.append(
                        "%s is declared under a preprocessor condition this "
                        "script cannot evaluate (%s)" % (name, origin))
                continue
            if name in protos:
                if protos[name].signature() != p.signature() and \
                        not name.startswith("P"):
                    problems.append("%s declared twice with different "
                                    "prototypes" % name)
                continue
            protos[name] = p
    return protos, problems


def read_grid_functions(path):
    sections = {"HANDWRITTEN": {}, "PASSTHROUGH": {}}
    current = None
    errors = []
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line, _, comment = raw.partition("#")
            line, comment = line.strip(), comment.strip()
            if not line:
                continue
            sm = re.fullmatch(r"\[(\w+)\]", line)
            if sm:
                if sm.group(1) not in sections:
                    errors.append("%s:%d: unknown section [%s]"
                                  % (path, lineno, sm.group(1)))
                current = sm.group(1)
                continue
            # A collective's three forms share a line; a PASSTHROUGH
            # entry is one name with its reason.
            names = line.split()
            bad = [n for n in names if not re.fullmatch(r"MPIX?_\w+", n)]
            if bad or (current == "PASSTHROUGH" and len(names) > 1):
                errors.append("%s:%d: not a function name: %r"
                              % (path, lineno, line))
                continue
            if current is None:
                errors.append("%s:%d: %s is outside a [HANDWRITTEN] or "
                              "[PASSTHROUGH] section" % (path, lineno, line))
                continue
            if current == "PASSTHROUGH" and not comment:
                errors.append("%s:%d: PASSTHROUGH entry %s needs a reason "
                              "(# comment on the same line)"
                              % (path, lineno, line))
            for name in names:
                for sec in sections.values():
                    if name in sec:
                        errors.append("%s:%d: %s listed twice"
                                      % (path, lineno, name))
                sections[current][name] = comment
    return sections["HANDWRITTEN"], sections["PASSTHROUGH"], errors


def wrap_list(head, items, tail, indent):
    """`head` + comma-separated `items` + `tail`, broken before 80 columns
    with continuation lines aligned after the opening parenthesis."""
    line = head + ", ".join(items) + tail
    if len(indent + line) <= 80:
        return indent + line
    lines, cur = [], indent + head
    pad = " " * len(cur)
    for i, item in enumerate(items):
        piece = item + (", " if i + 1 < len(items) else tail)
        if cur.strip() and len(cur + piece.rstrip()) > 80 and cur != pad \
                and not cur.endswith("("):
            lines.append(cur.rstrip())
            cur = pad
        cur += piece
    lines.append(cur)
    return "\n".join(lines)


def wrapper(p):
    args = [q.name for q in p.params]
    if p.params:
        sig = wrap_list("%s %s(" % (p.ret, p.name),
                        [q.decl for q in p.params], ")", "")
    else:
        sig = p.signature()
    lines = [sig, "{", "    GC_ENTER();"]
    for c in p.comm_params():
        if c.startswith("*"):
            lines.append("    if (%s != NULL && gc_comm_is_grid(%s))"
                         % (c[1:], c))
        else:
            lines.append("    if (gc_comm_is_grid(%s))" % c)
        lines.append("        return gc_unsupported(%s, \"%s\");"
                     % (c, p.name))
    lines.append("    GC_LEAVE();")
    lines.append(wrap_list("return P%s(" % p.name, args, ");", "    "))
    lines.append("}")
    return "\n".join(lines)


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    mpi_h, grid_txt, out_path = argv[1:]
    directory = os.path.dirname(os.path.abspath(mpi_h))
    errors = []

    pp = Preprocessor(directory)
    pp.run_file(mpi_h)
    # Prototype headers beside mpi.h that it did not include (an MPICH
    # that declares them elsewhere) are read as well.
    for extra in FOLLOW_INCLUDES:
        path = os.path.join(directory, extra)
        if os.path.exists(path):
            pp.run_file(path)
    protos, problems = collect(pp)
    errors += problems

    handwritten, passthrough, gf_errors = read_grid_functions(grid_txt)
    errors += gf_errors

    public = {n: p for n, p in protos.items() if re.match(r"^MPIX?_", n)}
    for name in ("MPI_Send", "MPI_Bcast", "MPI_Comm_dup", "MPI_File_open"):
        if name not in public:
            errors.append("%s not found in %s: wrong header?" % (name, mpi_h))

    comm_taking = {}
    for name, p in sorted(public.items()):
        if p.error:
            if p.mentions_comm:
                errors.append("%s: cannot parse its prototype (%s)"
                              % (name, p.error))
            continue
        ptrs = p.comm_pointer_params()
        by_value = [q for q in p.params if q.is_comm_by_value()]
        inout = COMM_POINTER_INOUT.get(name)
        if inout is not None and [q.name for q in ptrs] != [inout]:
            errors.append("%s: expected one in-out MPI_Comm *%s, found %s"
                          % (name, inout, [q.decl for q in ptrs]))
            continue
        if ptrs and not by_value and inout is None \
                and name not in COMM_POINTER_OUT_ONLY:
            errors.append("%s takes %s: classify it in COMM_POINTER_INOUT "
                          "or COMM_POINTER_OUT_ONLY"
                          % (name, ", ".join(q.decl for q in ptrs)))
            continue
        for q in ptrs:
            if by_value and q.base_type() != "MPI_Comm *":
                errors.append("%s takes %s besides a communicator: an input "
                              "array of communicators is not handled"
                              % (name, q.decl))
        odd = [q.decl for q in p.params
               if re.search(r"\bMPI_Comm\b", q.type) and "(" not in q.type
               and not q.is_comm_by_value() and not q.is_comm_pointer()]
        if odd:
            errors.append("%s: cannot classify parameter(s) %s"
                          % (name, ", ".join(odd)))
            continue
        if not p.comm_params():
            continue
        comm_taking[name] = p

    # A group of a grid communicator is a handle MPICH never made
    # (gc_group.c): passed to MPICH it would fail as "Invalid group", or
    # worse.  Every function taking a group needs a grid version.
    for name, p in sorted(public.items()):
        if p.error or name in handwritten:
            continue
        groups = [q.decl for q in p.params
                  if re.fullmatch(r"(const )?MPI_Group", q.type.strip())]
        if groups:
            errors.append("%s takes %s: grid groups are the runtime's own "
                          "handles; write a grid version (gc_group.c) and "
                          "list it in HANDWRITTEN" % (name, ", ".join(groups)))

    for listed, what in ((handwritten, "HANDWRITTEN"),
                         (passthrough, "PASSTHROUGH")):
        for name in listed:
            if name in SKIP:
                errors.append("%s is in %s and in the generator's SKIP list"
                              % (name, what))
            elif name not in public:
                errors.append("%s (%s) is not declared by %s"
                              % (name, what, mpi_h))
            elif name not in comm_taking and what == "PASSTHROUGH":
                errors.append("%s (PASSTHROUGH) takes no MPI_Comm" % name)
            # A HANDWRITTEN function without a communicator (MPI_Init, ...)
            # is allowed: listing it is harmless.

    wrap = []
    for name, p in comm_taking.items():
        if name in SKIP or name in handwritten or name in passthrough:
            continue
        if p.ret != "int":
            errors.append("%s returns %s, cannot report an error code"
                          % (name, p.ret))
            continue
        if name in pp.func_macros or name in pp.defines:
            errors.append("%s is also a macro in %s: a wrapper would define "
                          "something else" % (name, mpi_h))
            continue
        if "P" + name not in protos:
            errors.append("%s has no P%s declared" % (name, name))
            continue
        wrap.append(p)

    if errors:
        for e in errors:
            sys.stderr.write("gen_wrappers.py: error: %s\n" % e)
        sys.stderr.write("gen_wrappers.py: %d error(s); %s not written\n"
                         % (len(errors), out_path))
        return 1

    out = []
    out.append("/*\n * Generated by libgridcoll/gen/gen_wrappers.py from %s and\n"
               " * libgridcoll/gen/grid_functions.txt: do not edit.\n *\n"
               " * %d communicator-taking functions in the headers (by value, or\n"
               " * in-out MPI_Comm *): %d "
               "wrapped here,\n * %d hand-written, %d pass-through, %d "
               "skipped.\n */\n"
               % (os.path.basename(mpi_h), len(comm_taking), len(wrap),
                  sum(1 for n in handwritten if n in comm_taking),
                  len(passthrough),
                  sum(1 for n in SKIP if n in comm_taking)))
    out.append('#include "core/gc_comm.h"\n#include "core/gc_error.h"\n#include "core/gc_lock.h"\n#include "core/gc_world.h"\n\n#include <stddef.h>\n')
    for p in wrap:
        out.append(wrapper(p) + "\n")
    not_wrapped = sorted(set(comm_taking) - {p.name for p in wrap})
    out.append("/* For tests: what was wrapped, and the communicator-taking\n"
               " * functions that were not (hand-written, pass-through,\n"
               " * skipped). */\n"
               "extern const char *const gc_generated_wrappers[];\n"
               "extern const size_t gc_generated_wrappers_count;\n"
               "extern const char *const gc_comm_functions_not_wrapped[];\n"
               "extern const size_t gc_comm_functions_not_wrapped_count;\n"
               "extern const size_t gc_comm_functions_seen;\n\n"
               "const char *const gc_generated_wrappers[] = {")
    for p in wrap:
        out.append('    "%s",' % p.name)
    out.append("};\n\nconst size_t gc_generated_wrappers_count = %d;\n"
               % len(wrap))
    out.append("const char *const gc_comm_functions_not_wrapped[] = {")
    for name in not_wrapped:
        out.append('    "%s",' % name)
    out.append("};\n\nconst size_t gc_comm_functions_not_wrapped_count = %d;"
               "\n\nconst size_t gc_comm_functions_seen = %d;\n"
               % (len(not_wrapped), len(comm_taking)))
    text = "\n".join(out)
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, out_path)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (GenError, OSError) as e:
        sys.stderr.write("gen_wrappers.py: error: %s\n" % e)
        sys.exit(1)
