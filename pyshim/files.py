"""Files a run leaves in output/ (under its cwd, the scratch), collected for the report at its
end. Only what is safe to read is read: regular files with one link, opened without following
a symlink, without blocking on a fifo. The host checks every name and cap again and is the
only one that writes anything outside the sandbox; this side just cannot be the way a
symlink, hard link or device gets out.

Host-provided names: _OUT_MAX_FILES, _OUT_MAX_BYTES (the policy's caps, set at setup)."""

_OUT_MAX_FILES = 64
_OUT_MAX_BYTES = 16 << 20
_MAX_DEPTH = 8
_MAX_REFUSED = 64


def _collect_outputs(scratch):
    """(files, refused, refused_omitted): files [{"path", "data" (base64)}], refused
    [{"path", "reason"}] in the order found (sorted names, depth first)."""
    import os
    import stat
    import binascii
    files, refused, state = [], [], {"bytes": 0, "omitted": 0}

    def refuse(path, reason):
        if len(refused) < _MAX_REFUSED:
            refused.append({"path": path, "reason": reason})
        else:
            state["omitted"] += 1

    def read_one(dir_fd, name, path):
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=dir_fd)
        except OSError as e:
            refuse(path, "cannot be opened (%s)" % (e.strerror or e.errno))
            return
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                refuse(path, "not a regular file")
            elif st.st_nlink != 1:
                refuse(path, "a hard link (%d links)" % st.st_nlink)
            elif len(files) >= _OUT_MAX_FILES:
                refuse(path, "over the cap of %d files" % _OUT_MAX_FILES)
            elif state["bytes"] + st.st_size > _OUT_MAX_BYTES:
                refuse(path, "over the cap of %d bytes" % _OUT_MAX_BYTES)
            else:
                chunks, got = [], 0
                while got <= st.st_size:
                    b = os.read(fd, 1 << 20)
                    if not b:
                        break
                    chunks.append(b)
                    got += len(b)
                if got != st.st_size:
                    refuse(path, "changed size while read")
                    return
                state["bytes"] += got
                files.append({"path": path,
                              "data": binascii.b2a_base64(b"".join(chunks), newline=False)
                              .decode("ascii")})
        finally:
            os.close(fd)

    def walk(dir_fd, prefix, depth):
        try:
            with os.scandir(dir_fd) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            refuse(prefix or "output", "cannot be listed (%s)" % (e.strerror or e.errno))
            return
        for entry in entries:
            name, path = entry.name, prefix + entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                refuse(path, "vanished")
                continue
            if stat.S_ISLNK(st.st_mode):
                refuse(path, "a symlink")
            elif stat.S_ISDIR(st.st_mode):
                if depth >= _MAX_DEPTH:
                    refuse(path, "deeper than %d directories" % _MAX_DEPTH)
                    continue
                try:
                    sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW |
                                  os.O_CLOEXEC, dir_fd=dir_fd)
                except OSError as e:
                    refuse(path, "cannot be opened (%s)" % (e.strerror or e.errno))
                    continue
                try:
                    walk(sub, path + "/", depth + 1)
                finally:
                    os.close(sub)
            elif stat.S_ISREG(st.st_mode):
                read_one(dir_fd, name, path)
            else:
                refuse(path, "not a regular file")

    try:
        # relative names (opened under a directory fd) are judged by the audit hook against
        # the cwd: be in the scratch, wherever the snippet went
        os.chdir(scratch)
        top = os.open(scratch + "/output", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return files, refused, 0  # no output/ (the snippet removed it, or none was made)
    try:
        walk(top, "", 0)
    finally:
        os.close(top)
    return files, refused, state["omitted"]
