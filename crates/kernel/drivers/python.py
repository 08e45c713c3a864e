# Gantry's Python kernel driver (SPEC §9). Embedded in the gantry binary and
# run with `python -c`, so nothing is written into the user's checkout.
#
# It speaks length-prefixed JSON frames (4-byte big-endian length, then
# UTF-8 JSON) on two descriptors named by GANTRY_KERNEL_FDS ("IN,OUT"):
# user code printing to stdout or stderr can never corrupt the protocol.
# Host to kernel: exec {code}, tool_result {id, ok, text, parts, error}.
# Kernel to host: hello, stream {name, text}, display {data}, result {data},
# error {ename, evalue, traceback}, tool_call {id, name, args}, done {names}.
# Output written below Python (subprocesses, C code, a crash's last words)
# goes to the real stdout/stderr, which the host captures as well.


def _gantry_driver():
    import _signal
    import ast
    import base64
    import builtins
    import io
    import json
    import os
    import signal
    import struct
    import sys
    import types

    in_fd, out_fd = (int(fd) for fd in os.environ.pop("GANTRY_KERNEL_FDS").split(","))
    # Written into stdout before each frame after the hello, so that the
    # host can put what was printed (by a subprocess, say) in order with
    # the frames; on a copy of fd 1 of our own, which a cell redirecting
    # fd 1 does not move.
    sync_marker = os.environ.pop("GANTRY_KERNEL_SYNC").encode()
    sync_fd = []
    # Commands the cell starts (`!cmd`, subprocess) must not inherit them.
    os.set_inheritable(in_fd, False)
    os.set_inheritable(out_fd, False)
    real_stdout, real_stderr = sys.stdout, sys.stderr
    no_interrupt_mask = {signal.SIGINT}
    # signal's own wrapper turns every mask it returns into enums: a few
    # microseconds a call, four calls a cell.
    sigmask = _signal.pthread_sigmask
    # Interrupts reach user code only: a frame half written or half read
    # would break the protocol, so SIGINT waits while the driver talks.
    signal.pthread_sigmask(signal.SIG_BLOCK, no_interrupt_mask)

    import threading

    main_thread = threading.get_ident()

    class NoInterrupt:
        """SIGINT held back while the main thread talks to the host (a
        signal mask is per thread, and only the main thread gets SIGINT)."""

        depth = 0

        def __enter__(self):
            if threading.get_ident() != main_thread:
                return
            NoInterrupt.depth += 1
            if NoInterrupt.depth == 1:
                sigmask(signal.SIG_BLOCK, no_interrupt_mask)

        def __exit__(self, *exc):
            if threading.get_ident() != main_thread:
                return
            NoInterrupt.depth -= 1
            if NoInterrupt.depth == 0 and running[0]:
                sigmask(signal.SIG_UNBLOCK, no_interrupt_mask)

    no_interrupt = NoInterrupt()
    running = [False]

    def on_interrupt(signum, frame):
        """KeyboardInterrupt in the cell only: the host sends SIGINT a
        second time when the first was lost, and that one must not cut the
        driver's own work short once the cell is over."""
        if running[0]:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_interrupt)

    def stop_interrupts():
        running[0] = False
        sigmask(signal.SIG_BLOCK, no_interrupt_mask)

    # Threads of the cell print too: one frame at a time on the pipe.
    frame_lock = threading.Lock()

    # Frames held back to go out with the next one, in one write: a cell's
    # result waits for its `done`, so a trivial cell costs two writes (the
    # markers, the frames) and wakes the host once, not twice.
    held = []

    def encode(frame):
        data = json.dumps(frame, default=repr).encode("utf-8", "replace")
        return struct.pack(">I", len(data)) + data

    def hold(frame):
        with frame_lock:
            held.append(encode(frame))

    def write_frame(frame):
        data = encode(frame)
        with no_interrupt, frame_lock:
            frames = held + [data]
            held.clear()
            for fd in sync_fd:
                try:
                    # One marker per frame; at most two frames (a held
                    # result and the frame after it), so the markers are
                    # shorter than PIPE_BUF and written whole.
                    os.write(fd, sync_marker * len(frames))
                except OSError:
                    pass  # the order of these frames with stdout is lost; nothing else is
            view = memoryview(b"".join(frames))
            while view:
                view = view[os.write(out_fd, view):]

    class HostGone(BaseException):
        """Gantry closed the protocol pipe: the kernel ends (a BaseException,
        so no `except Exception` of a cell holds it up)."""

    def read_exact(n):
        chunks = []
        while n:
            chunk = os.read(in_fd, n)
            if not chunk:
                raise HostGone
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def read_frame():
        with no_interrupt:
            (n,) = struct.unpack(">I", read_exact(4))
            return json.loads(read_exact(n))

    class Stream(io.TextIOBase):
        """sys.stdout and sys.stderr: text as stream frames, so prints keep
        their order with displays and results; line by line."""

        def __init__(self, name, real):
            self.name = name
            self.real = real
            self.pending = []
            self.size = 0
            self.lock = threading.RLock()

        def writable(self):
            return True

        @property
        def encoding(self):
            return "utf-8"

        def isatty(self):
            return False

        def fileno(self):
            return self.real.fileno()

        def write(self, text):
            if not isinstance(text, str):
                raise TypeError(f"write() argument must be str, not {type(text).__name__}")
            if text:
                with self.lock:
                    self.pending.append(text)
                    self.size += len(text)
                    if "\n" in text or self.size > 8192:
                        self.flush()
            return len(text)

        def flush(self):
            with self.lock:
                if self.pending:
                    text = "".join(self.pending)
                    self.pending = []
                    self.size = 0
                    write_frame({"type": "stream", "name": self.name, "text": text})

    stdout = Stream("stdout", real_stdout)
    stderr = Stream("stderr", real_stderr)

    def flush_streams():
        stdout.flush()
        stderr.flush()

    def send(frame):
        flush_streams()
        write_frame(frame)

    # -- rich output --------------------------------------------------------

    MAX_ROWS = 20
    MAX_COLS = 20
    PNG_BUDGET = 200_000
    shown_figures = set()

    def cell_text(value):
        return str(value).replace("|", "\\|").replace("\n", " ")

    def frame_markdown(frame):
        """A pandas DataFrame (or Series) as a Markdown table, capped in rows
        and columns, the cut said."""
        if getattr(frame, "ndim", 2) == 1:
            frame = frame.to_frame()
        rows, cols = frame.shape
        shown = frame.iloc[:, :MAX_COLS] if cols > MAX_COLS else frame
        half = MAX_ROWS // 2
        parts = [shown.iloc[:half], None, shown.iloc[-half:]] if rows > MAX_ROWS else [shown]
        header = [cell_text(frame.index.name or "")] + [cell_text(c) for c in shown.columns]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for part in parts:
            if part is None:
                lines.append("| " + " | ".join(["…"] * len(header)) + " |")
                continue
            for index, row in zip(part.index, part.itertuples(index=False)):
                lines.append("| " + " | ".join([cell_text(index)] + [cell_text(v) for v in row]) + " |")
        notes = []
        if rows > MAX_ROWS:
            notes.append(f"first {half} and last {half} of {rows} rows")
        if cols > MAX_COLS:
            notes.append(f"first {MAX_COLS} of {cols} columns")
        table = "\n".join(lines)
        if notes:
            table += f"\n\n[{rows} rows × {cols} columns; shown: {', '.join(notes)}]"
        return table

    def figure_png(figure):
        """One PNG of a matplotlib figure: tight bounding box, about 100
        dpi, made smaller until it fits the budget."""
        data = b""
        for dpi in (100, 72, 50, 36, 24):
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
            data = buffer.getvalue()
            if len(data) <= PNG_BUDGET:
                break
        return data

    def bundle(value):
        """The mime bundle of a value: image/png, text/markdown and
        text/plain as it has them (the host picks png > markdown > plain)."""
        data = {}
        kind = type(value)
        module = kind.__module__ or ""
        if module.startswith("matplotlib") and hasattr(value, "savefig"):
            data["image/png"] = base64.b64encode(figure_png(value)).decode()
            shown_figures.add(id(value))
        elif module.startswith("pandas") and kind.__name__ in ("DataFrame", "Series"):
            data["text/markdown"] = frame_markdown(value)
        else:
            for method, mime in (("_repr_png_", "image/png"), ("_repr_markdown_", "text/markdown")):
                render = getattr(value, method, None)
                if callable(render) and not isinstance(value, type):
                    try:
                        got = render()
                    except Exception:
                        got = None
                    if isinstance(got, bytes) and mime == "image/png":
                        data[mime] = base64.b64encode(got).decode()
                    elif isinstance(got, str):
                        data[mime] = got
        data["text/plain"] = repr(value)
        return data

    def display(*values, raw=False):
        """Shows each value in the cell's output: an image, a table, text.
        With raw=True each value is a mime bundle already, e.g.
        {"text/markdown": "**done**"} or {"image/png": base64_text}."""
        for value in values:
            if raw:
                data = {str(mime): content if isinstance(content, str) else
                        base64.b64encode(content).decode() for mime, content in dict(value).items()}
            else:
                data = bundle(value)
            send({"type": "display", "data": data})

    def show_open_figures():
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is None:
            return
        for number in pyplot.get_fignums():
            figure = pyplot.figure(number)
            if id(figure) not in shown_figures:
                send({"type": "display", "data": {
                    "image/png": base64.b64encode(figure_png(figure)).decode(),
                    "text/plain": repr(figure)}})
        pyplot.close("all")
        shown_figures.clear()

    # -- the tool bridge ------------------------------------------------------

    class ToolError(Exception):
        """A bridged tool call failed (refused, declined, or the tool's own error)."""

    class ToolOutput(str):
        """A bridged call's text; `.parts` holds its structured parts."""

        parts = ()

    calls = [0]

    def tool(name, args=None):
        """Calls one of Gantry's tools, as the model would: tool("read_file", {"path": "README.md"})."""
        calls[0] += 1
        call_id = calls[0]
        with no_interrupt:
            send({"type": "tool_call", "id": call_id, "name": name, "args": args or {}})
            reply = read_frame()
        if reply.get("type") != "tool_result" or reply.get("id") != call_id:
            raise ToolError(f"protocol error: expected the result of call {call_id}, got {reply!r}")
        if not reply.get("ok"):
            raise ToolError(reply.get("error") or "the tool failed")
        out = ToolOutput(reply.get("text", ""))
        out.parts = reply.get("parts", [])
        return out

    # -- IPython idioms ---------------------------------------------------------

    import re

    def expand(command, namespace):
        """$name and {name} as IPython expands them in shell commands."""
        def value(match):
            name = match.group(1) or match.group(2)
            return str(namespace[name]) if name in namespace else match.group(0)
        return re.sub(r"\$([A-Za-z_]\w*)|\{([A-Za-z_]\w*)\}", value, command)

    def caller_namespace():
        return user_ns

    class Shim:
        """What IPython's transformer calls: get_ipython().system(...) and friends."""

        supported = "%pip, %cd, %time, %timeit, %%bash, %%time, %%timeit, !cmd and x = !cmd"

        def system(self, command):
            import subprocess
            flush_streams()
            code = subprocess.call(expand(command, caller_namespace()), shell=True, executable="/bin/bash")
            user_ns["_exit_code"] = code

        def getoutput(self, command, split=True):
            import subprocess
            done = subprocess.run(expand(command, caller_namespace()), shell=True, executable="/bin/bash",
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            return done.stdout.splitlines() if split else done.stdout

        def run_line_magic(self, name, line):
            magic = getattr(self, "line_" + name, None)
            if magic is None:
                raise UsageError(f"%{name} is not supported by Gantry's kernel (supported: {self.supported})")
            return magic(line)

        def run_cell_magic(self, name, line, cell):
            magic = getattr(self, "cell_" + name, None)
            if magic is None:
                raise UsageError(f"%%{name} is not supported by Gantry's kernel (supported: {self.supported})")
            return magic(line, cell)

        def line_cd(self, line):
            target = os.path.expanduser(line.strip().strip("'\"") or "~")
            os.chdir(target)
            print(os.getcwd())

        def line_pip(self, line):
            import shlex
            import subprocess
            import importlib.util
            args = shlex.split(expand(line, caller_namespace()))
            before = installed()
            flush_streams()
            if importlib.util.find_spec("pip") is None:
                # Gantry's environment has no pip of its own and this
                # system Python none to lend it: bring the bundled one.
                subprocess.call([sys.executable, "-m", "ensurepip", "--default-pip"])
            entries = site_entries()
            code = subprocess.call([sys.executable, "-m", "pip", *args, "--disable-pip-version-check"])
            if code:
                # pip rolls back what it uninstalled, not what it half
                # installed (a full disk leaves a package without files).
                left = remove_new_entries(entries)
                if left:
                    print(f"[the failed install left {', '.join(sorted(left))} behind; removed]")
            evicted = evict(before)
            if evicted:
                print(f"[the next import sees the new install: {', '.join(sorted(evicted))} removed from sys.modules]")
            if code:
                raise UsageError(f"pip exited with code {code}")

        def line_time(self, line):
            return self.cell_time("", line)

        def cell_time(self, line, cell):
            import time
            started = time.perf_counter()
            try:
                return run_source(cell, "<%time>", echo=False)
            finally:
                print(f"Wall time: {format_seconds(time.perf_counter() - started)}")

        def line_timeit(self, line):
            return self.cell_timeit("", line)

        def cell_timeit(self, setup, statement):
            import timeit
            timer = timeit.Timer(statement, setup or "pass", globals=user_ns)
            number, _ = timer.autorange()
            runs = [t / number for t in timer.repeat(repeat=5, number=number)]
            mean = sum(runs) / len(runs)
            spread = (sum((r - mean) ** 2 for r in runs) / len(runs)) ** 0.5
            print(f"{format_seconds(mean)} ± {format_seconds(spread)} per loop "
                  f"(mean ± std. dev. of {len(runs)} runs, {number} loops each)")

        def cell_bash(self, line, cell):
            import subprocess
            flush_streams()
            code = subprocess.call(["/bin/bash", "-c", cell])
            if code:
                raise UsageError(f"%%bash: the script exited with code {code}")

    class UsageError(Exception):
        """A magic used wrongly or not supported."""

    def format_seconds(seconds):
        for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
            if seconds >= scale:
                return f"{seconds / scale:.3g} {unit}"
        return f"{seconds / 1e-9:.3g} ns"

    def site_dirs():
        import site
        dirs = list(site.getsitepackages())
        if site.ENABLE_USER_SITE:
            dirs.append(site.getusersitepackages())
        return [d for d in dirs if os.path.isdir(d)]

    def site_entries():
        """What each site-packages folder holds now, by name."""
        return {d: set(os.listdir(d)) for d in site_dirs()}

    def remove_new_entries(entries):
        """Removes what appeared in the site-packages folders since
        `entries` was taken; the names removed."""
        import shutil
        removed = []
        for d, names in entries.items():
            for name in set(os.listdir(d)) - names:
                path = os.path.join(d, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    try:
                        os.unlink(path)
                    except OSError:
                        pass
                removed.append(name)
        return removed

    def installed():
        import importlib.metadata
        found = {}
        for dist in importlib.metadata.distributions():
            found[(dist.metadata["Name"] or "").lower()] = (dist.version, dist)
        return found

    def evict(before):
        """Drops from sys.modules the top-level modules of every distribution
        pip added or changed, so the next import loads the new install."""
        import importlib
        importlib.invalidate_caches()
        tops = set()
        for name, (version, dist) in installed().items():
            if before.get(name, (None,))[0] == version:
                continue
            listed = dist.read_text("top_level.txt")
            if listed:
                tops.update(line.strip() for line in listed.splitlines() if line.strip())
            for file in dist.files or ():
                first = file.parts[0]
                if first.endswith(".py"):
                    tops.add(first[:-3])
                elif not first.endswith((".dist-info", ".egg-info", ".pth")) and len(file.parts) > 1 and first != "..":
                    tops.add(first)
        evicted = set()
        for module in list(sys.modules):
            if module.split(".")[0] in tops:
                del sys.modules[module]
                evicted.add(module.split(".")[0])
        return evicted

    shim = Shim()

    def get_ipython():
        return shim

    def rewrite(code):
        """The IPython idioms as plain code, for interpreters without IPython."""
        lines = code.split("\n")
        if lines[0].startswith("%%"):
            name, _, arg = lines[0][2:].partition(" ")
            return f"get_ipython().run_cell_magic({name!r}, {arg!r}, {chr(10).join(lines[1:])!r})\n"
        out = []
        for line in lines:
            stripped = line.lstrip()
            indent = line[: len(line) - len(stripped)]
            assigned = re.match(r"([A-Za-z_][\w.]*)\s*=\s*!(.*)$", stripped)
            if assigned:
                out.append(f"{indent}{assigned.group(1)} = get_ipython().getoutput({assigned.group(2)!r})")
            elif stripped.startswith("!"):
                out.append(f"{indent}get_ipython().system({stripped[1:]!r})")
            elif stripped.startswith("%"):
                name, _, arg = stripped[1:].partition(" ")
                out.append(f"{indent}get_ipython().run_line_magic({name!r}, {arg!r})")
            else:
                out.append(line)
        return "\n".join(out)

    transformer = []

    def transform(code):
        """Plain Python is left alone; IPython idioms go through IPython's own
        transformer when this interpreter has IPython, else `rewrite`. The
        code to run, with its tree when plain Python parsed it already."""
        try:
            return code, ast.parse(code)
        except SyntaxError:
            pass
        if not re.search(r"^\s*(%|!|[\w.]+\s*=\s*!)", code, re.M):
            return code, None
        if not transformer:
            try:
                from IPython.core.inputtransformer2 import TransformerManager
                transformer.append(TransformerManager().transform_cell)
            except ImportError:
                transformer.append(rewrite)
        return transformer[0](code), None

    # -- the checkout stays as it was ------------------------------------------------

    from importlib.machinery import SourceFileLoader

    checkout = os.path.join(os.getcwd(), "")
    cache_bytecode = SourceFileLoader.set_data

    def set_data(self, path, data, *, _mode=0o666):
        """Bytecode of the checkout's own modules is not cached: importing
        one must leave no __pycache__ in the user's files (the standard
        library and installed packages keep theirs)."""
        if str(path).startswith(checkout):
            return None
        return cache_bytecode(self, path, data, _mode=_mode)

    SourceFileLoader.set_data = set_data

    # -- cells --------------------------------------------------------------------

    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": builtins, "display": display, "tool": tool,
                          "get_ipython": get_ipython, "ToolError": ToolError})
    sys.modules["__main__"] = main
    user_ns = main.__dict__
    hidden = set(user_ns)
    loop = []
    counter = [0]

    import linecache

    def run_source(source, filename, echo, tree=None):
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        if tree is None:
            tree = ast.parse(source, filename, "exec")
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        last = None
        if echo and tree.body and isinstance(tree.body[-1], ast.Expr) and not source.rstrip().endswith(";"):
            last = ast.Expression(tree.body.pop().value)
        for node, mode in ((tree, "exec"), (last, "eval")):
            if node is None:
                continue
            code = compile(node, filename, mode, flags=flags)
            value = eval(code, user_ns)
            if code.co_flags & 0x80:  # CO_COROUTINE: the cell awaits at top level
                if not loop:
                    import asyncio
                    loop.append(asyncio.new_event_loop())
                    asyncio.set_event_loop(loop[0])
                value = loop[0].run_until_complete(value)
            if mode == "eval":
                return value
        return None

    def user_traceback(error):
        import traceback
        tb = error.__traceback__
        while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell"):
            tb = tb.tb_next
        # The interrupt handler is the driver's, not a frame of the cell.
        last = tb
        while last is not None and last.tb_next is not None:
            if last.tb_next.tb_frame.f_code is on_interrupt.__code__:
                last.tb_next = None
            last = last.tb_next
        if isinstance(error, SyntaxError):
            tb = None
        return "".join(traceback.format_exception(type(error), error, tb))

    def state_names():
        names, modules = [], []
        for name, value in user_ns.items():
            if name in hidden or name.startswith("_"):
                continue
            (modules if isinstance(value, types.ModuleType) else names).append(name)
        return names, modules

    def run_cell(code):
        counter[0] += 1
        filename = f"<cell {counter[0]}>"
        calls[0] = 0
        try:
            source, tree = transform(code)
            # An interrupt meant for a cell that ended meanwhile is dropped.
            if signal.SIGINT in _signal.sigpending():
                signal.sigwait(no_interrupt_mask)
            running[0] = True
            sigmask(signal.SIG_UNBLOCK, no_interrupt_mask)
            try:
                value = run_source(source, filename, echo=True, tree=tree)
            finally:
                stop_interrupts()
            if value is not None:
                user_ns["_"] = value
                flush_streams()
                hold({"type": "result", "data": bundle(value)})
        except BaseException as error:  # KeyboardInterrupt and SystemExit too: the kernel stays
            # A second interrupt may have cut the `finally` above short.
            stop_interrupts()
            if isinstance(error, HostGone):
                raise
            send({"type": "error", "ename": type(error).__name__, "evalue": str(error),
                  "traceback": user_traceback(error)})
        try:
            show_open_figures()
        except Exception as error:
            send({"type": "error", "ename": type(error).__name__, "evalue": str(error),
                  "traceback": user_traceback(error)})
        names, modules = state_names()
        send({"type": "done", "names": names, "modules": modules})

    sys.stdout, sys.stderr = stdout, stderr
    sys.displayhook = lambda value: None
    write_frame({"type": "hello", "pid": os.getpid(), "language": "python",
                 "version": sys.version.split()[0], "executable": sys.executable})
    sync_fd.append(os.dup(1))
    while True:
        try:
            frame = read_frame()
        except HostGone:
            return
        if frame.get("type") == "exec":
            run_cell(frame["code"])


_gantry_driver()
