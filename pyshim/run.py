"""Run-time glue called by host/interp.c: setup() and preimport() once in the zygote, begin()
and finish() in each worker. The snippet itself is executed by C, at the bottom of the stack,
so no frame of this file is ever reachable from it."""

import builtins
import sys


def setup(python_layer, import_func, finder):
    """Install the import policy (the C __import__ wrapper and a meta_path finder, both from
    host/audit.c). With the python layer off nothing is installed. (The closure of the
    allowlist is built in C from closure.py, compiled into the binary: host/closure.h.)"""
    if python_layer:
        builtins.__import__ = import_func
        sys.meta_path.insert(0, finder)


def preimport(modules, mpl_cache):
    """Zygote only: import every allowed module now, so a worker pays nothing for it, then
    freeze the heap so forked workers do not copy it on the first collection.

    random registers a fork hook, its instance's seed(), that every worker would run through
    Python (~0.1 ms and ~20 copied pages each). Its registration is held back here; returned
    is (random._inst, _random.Random.seed), with which the worker reseeds from C exactly as
    that hook does (host/interp.c), or None when random was not imported."""
    import os
    register, held = os.register_at_fork, []
    # matplotlib's font list from the prebuilt cache (made by `make`), its Agg backend
    os.environ["MPLCONFIGDIR"] = mpl_cache
    os.environ["MPLBACKEND"] = "Agg"
    # The audit hook is not active yet: what it does for a library's lookup (a third-party
    # module the policy does not list is absent) a finder does here, or pandas would import
    # numexpr and bottleneck into the zygote (numexpr starts threads at import).
    listed = {name.partition(".")[0] for name in modules}

    class Unlisted:
        @staticmethod
        def find_spec(name, path=None, target=None):
            top = name.partition(".")[0]
            # (the stdlib's platform-named _sysconfigdata_* is not in stdlib_module_names)
            if (top not in listed and top not in sys.stdlib_module_names and
                    not top.startswith("_sysconfigdata_")):
                raise ModuleNotFoundError("pysnip: %s is not in the policy" % name, name=name)
            return None

    sys.meta_path.insert(0, Unlisted)

    def hold_random_reseed(**hooks):
        inst = getattr(sys.modules.get("random"), "_inst", None)
        child = hooks.get("after_in_child")
        if (inst is not None and list(hooks) == ["after_in_child"] and
                getattr(child, "__self__", None) is inst and
                getattr(child, "__func__", None) is type(inst).seed):
            held.append(inst)
            return None
        return register(**hooks)

    os.register_at_fork = hold_random_reseed
    try:
        for name in modules:
            try:
                __import__(name)
            except BaseException:  # an allowed module that cannot load here stays unloaded
                pass
        _warm_libraries()
    finally:
        os.register_at_fork = register
        sys.meta_path.remove(Unlisted)
    # a fork copies one thread: a module that started threads (a library's pool) would leave
    # the workers with locks held by threads that do not exist in them
    tasks = os.listdir("/proc/self/task")
    if len(tasks) > 1:
        raise RuntimeError("a pre-imported module started %d threads in the zygote; forking "
                           "it is unsafe" % (len(tasks) - 1))
    import gc
    gc.collect()
    gc.freeze()
    if not held:
        return None
    import _random
    return held[0], _random.Random.seed


_SCRATCH = None


def _warm_libraries():
    """What the libraries a zygote imported do lazily on first use, done once here instead of
    in every worker: Pillow's image plugins (its first open() imports them), matplotlib's
    Agg backend, text layout and PNG writer (its first figure). matplotlib reopens its fonts
    in each child itself (a fork hook clears its font cache)."""
    pil = sys.modules.get("PIL.Image")
    if pil is not None:
        try:
            pil.preinit()
        except BaseException:
            pass
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            import io
            fig, ax = plt.subplots()
            ax.plot([0, 1], [0, 1])
            ax.set_title("warm")
            fig.canvas.print_figure(io.BytesIO(), format="png", bbox_inches="tight")
        except BaseException:
            pass
        finally:
            plt.close("all")


def rehearse_plot():
    """host/run/worker.c: a plot spare's warm-up (display.py)."""
    _display["rehearse_plot"]()


def begin(scratch, lib_env=False):
    """Fresh __main__ for the snippet; its temporary files and home go to scratch. lib_env: the
    policy has library paths (numpy, Pillow, matplotlib), which get their settings too."""
    global _SCRATCH
    _SCRATCH = scratch
    main = type(sys)("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    if scratch:
        os = sys.modules.get("os")
        # one BLAS and OpenMP thread (read when numpy or Pillow first loads them); matplotlib
        # renders with Agg and keeps its config and font list in the scratch (the worker
        # copied the prebuilt list there)
        env = {"TMPDIR": scratch, "HOME": scratch}
        if lib_env:
            env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg",
                       MPLCONFIGDIR=scratch + "/.matplotlib")
        for key, value in env.items():
            if os is not None:
                os.environ[key] = value
            else:  # os.environ will be built from this when os is first imported
                sys.modules["posix"].environ[key.encode()] = value.encode()
        tempfile = sys.modules.get("tempfile")
        if tempfile is not None:
            tempfile.tempdir = None
    return main.__dict__


def _flush():
    done = []
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if any(stream is d for d in done):  # sys.stdout is usually sys.__stdout__
            continue
        done.append(stream)
        try:
            stream.flush()
        except BaseException:
            pass


def _clean_bundles(shown):
    """The display namespace is the snippet's to reach: keep only what is a bundle, its mime
    types and text as str (JSON values as they are), so the report is always valid JSON."""
    out = []
    if not isinstance(shown, list):
        return out
    for b in shown:
        if not isinstance(b, dict) or not isinstance(b.get("data"), dict):
            continue
        data = {}
        for k, v in b["data"].items():
            if isinstance(v, (dict, list)):
                data[_safe_str(k)] = v
            else:
                data[_safe_str(k)] = _safe_str(v)
        md = b.get("metadata")
        c = {"data": data, "metadata": md if isinstance(md, dict) else {}}
        if b.get("truncated") is True:  # display.py dropped it: over the output cap
            c["truncated"] = True
        out.append(c)
    return out


def finish(exc, src, denied):
    """(report bytes, exit code): 0 finished, 1 uncaught exception, n for SystemExit(n).
    denied: exc is an exception the C audit hook raised itself (not a look-alike)."""
    exc_info, kind, code, sys_code, memory_error = None, "ok", 0, None, False
    if exc is not None and isinstance(exc, SystemExit):
        kind, c = "system_exit", exc.code
        if c is None:
            code = 0
        elif isinstance(c, int):
            code = int(c)
        else:  # as python3 does: the message on stderr, status 1
            try:
                print(c, file=sys.stderr)
            except BaseException:
                pass
            code = 1
        sys_code = code
        code &= 0xFF
    elif exc is not None:
        kind, code = "exception", 1
        memory_error = isinstance(exc, MemoryError)
        exc_info = _describe(exc, src)
        if denied:
            exc_info["denied"] = True
    threading = sys.modules.get("threading")
    if threading is not None:  # as at interpreter exit: wait for non-daemon threads
        try:
            threading._shutdown()
        except BaseException:
            pass
    _flush()
    extra = {}
    try:
        shown = _display["flush"]()
    except BaseException as e:  # a figure that cannot be drawn: said, the rest kept
        shown = [{"data": {"text/plain": "display failed: %s: %s" % (
            _type_name(type(e)), _safe_str(e))}, "metadata": {}}]
    if shown:
        extra["display"] = _clean_bundles(shown)
    if _SCRATCH:
        try:
            files, refused, omitted = _collect_outputs(_SCRATCH)
        except BaseException as e:  # a MemoryError reading them: say so, never lose the report
            files, refused, omitted = [], [{"path": "output", "reason": _safe_str(e)}], 0
        if files or refused:
            extra.update(files=files, files_refused=refused, files_refused_omitted=omitted)
    return _report(exc, exc_info, kind, sys_code, memory_error, extra), code
