"""ansible-playbook for the tests, started by forking a process that has
already imported Ansible's controller, instead of a new Python each time.

A run is the same `ansible-playbook` as on the command line: its own
process (its own session, so a timeout kills it with its workers and
modules), the same argv, environment, working directory and exit code,
and Ansible's configuration read from that environment, because each
server is started with exactly the environment and working directory of
the runs it serves (one server per distinct pair: an ansible.cfg may be
read from either). What is saved is the start-up: about
0.7 s of the ~1.5 s a one-task playbook takes on the project's machine,
paid hundreds of times by the suite.

Every run is bounded: past its timeout the run is killed and the test
fails with the end of its output.

OVERCOMMIT_TEST_FORKSERVER=0 runs a plain `ansible-playbook` process
instead, for comparison or when in doubt."""

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

# Long enough for the longest playbook the tests run (a rollout over four
# units); a hung run fails its test instead of waiting for CI's limit.
DEFAULT_TIMEOUT = 600
# pytest sets this for each test; it is not part of what Ansible reads.
_IGNORED = ("PYTEST_CURRENT_TEST",)
_MAX_SERVERS = 6

_servers = {}  # environment key -> (process, socket path)
_order = []


class PlaybookTimeout(AssertionError):
    pass


def _key(env, cwd):
    return json.dumps([cwd, sorted((k, v) for k, v in env.items() if k not in _IGNORED)])


def _stop(key):
    process, path = _servers.pop(key)
    _order.remove(key)
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    try:
        os.unlink(path)
    except OSError:
        pass


def _stop_all():
    for key in list(_servers):
        _stop(key)


atexit.register(_stop_all)


def _server(env, cwd):
    key = _key(env, cwd)
    if key in _servers and _servers[key][0].poll() is None:
        return _servers[key][1]
    if key in _servers:
        _stop(key)
    while len(_servers) >= _MAX_SERVERS:
        _stop(_order[0])
    path = os.path.join(tempfile.mkdtemp(prefix="oc-forkserver-"), "socket")
    process = subprocess.Popen([sys.executable, os.path.abspath(__file__), path], env=env, cwd=cwd,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not os.path.exists(path):
        if process.poll() is not None or time.time() > deadline:
            error = process.stderr.read().decode(errors="replace") if process.poll() is not None else "timed out"
            process.kill()
            raise AssertionError("the ansible-playbook fork server did not start: %s" % error)
        time.sleep(0.02)
    _servers[key] = (process, path)
    _order.append(key)
    return path


def _plain(argv, env, cwd, timeout):
    process = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        raise PlaybookTimeout("ansible-playbook ran over its %d s and was killed: %s\n%s\n%s" % (
            timeout, " ".join(argv), stdout[-3000:], stderr[-3000:]))
    except BaseException:  # the test interrupted (pytest-timeout): the run goes too
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def run(argv, env=None, cwd=None, timeout=DEFAULT_TIMEOUT):
    """Runs `argv` (an ansible-playbook command line) to its end, at most
    `timeout` seconds; a subprocess.CompletedProcess with text output."""
    env = dict(os.environ if env is None else env)
    env.pop("PYTEST_CURRENT_TEST", None)
    cwd = cwd or os.getcwd()
    if os.environ.get("OVERCOMMIT_TEST_FORKSERVER", "1") == "0":
        return _plain(argv, env, cwd, timeout)
    out_dir = tempfile.mkdtemp(prefix="oc-playbook-")
    stdout_path, stderr_path = os.path.join(out_dir, "stdout"), os.path.join(out_dir, "stderr")
    request = {"argv": list(argv), "env": env, "cwd": cwd, "stdout": stdout_path, "stderr": stderr_path}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(_server(env, cwd))
            conn.sendall(json.dumps(request).encode() + b"\n")
            reader = conn.makefile("r")
            pid = int(reader.readline())
            conn.settimeout(timeout)
            status = None
            try:
                status = reader.readline()
            except socket.timeout:
                pass
            finally:
                # Past its timeout, or the test itself interrupted (pytest-timeout):
                # the run goes with all of its processes.
                if not status:
                    for kill in (os.killpg, os.kill):
                        try:
                            kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
        stdout, stderr = (open(path, errors="replace").read() if os.path.exists(path) else ""
                          for path in (stdout_path, stderr_path))
        if not status:
            raise PlaybookTimeout("ansible-playbook ran over its %d s and was killed: %s\n%s\n%s" % (
                timeout, " ".join(argv), stdout[-3000:], stderr[-3000:]))
        return subprocess.CompletedProcess(list(argv), int(status), stdout, stderr)
    finally:
        for path in (stdout_path, stderr_path):
            if os.path.exists(path):
                os.unlink(path)
        os.rmdir(out_dir)


# ------------------------------------------------------------- the server


def _child(request):
    """In the forked child: become the ansible-playbook process of the request."""
    import atexit as child_atexit
    import shutil

    from ansible import constants
    from ansible.cli.playbook import main

    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # The server's exit handlers (its own local tmp among them) are not this run's.
    child_atexit._clear()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, mode in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY | os.O_CREAT),
                           (2, request["stderr"], os.O_WRONLY | os.O_CREAT)):
        opened = os.open(path, mode, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    # Ansible makes a local tmp per process when its configuration is read
    # (named after the pid and removed at exit): make this run's own.
    local_tmp = tempfile.mkdtemp(prefix="ansible-local-%s" % os.getpid(),
                                 dir=os.path.dirname(constants.DEFAULT_LOCAL_TMP))
    constants.DEFAULT_LOCAL_TMP = local_tmp
    child_atexit.register(shutil.rmtree, local_tmp, True)
    sys.argv = list(request["argv"])
    main(sys.argv)


def _handle(conn):
    """A handler per request: forks the run, tells the client its pid, waits
    for it and sends its exit code."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    reader = conn.makefile("r")
    request = json.loads(reader.readline())
    pid = os.fork()
    if pid == 0:
        conn.close()
        code = 1
        try:
            _child(request)
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        # Exit as a process does at its end: exit handlers of the run, then go.
        import atexit as child_atexit
        child_atexit._run_exitfuncs()
        os._exit(code)
    conn.sendall(b"%d\n" % pid)
    status = os.waitpid(pid, 0)[1]
    code = os.waitstatus_to_exitcode(status)
    try:
        conn.sendall(b"%d\n" % code)
    except OSError:
        pass


def serve(path):
    # Import what every run imports, once: this is the start-up saved.
    import ansible.cli.playbook  # noqa: F401
    import ansible.executor.playbook_executor  # noqa: F401
    import ansible.executor.task_queue_manager  # noqa: F401
    import ansible.inventory.manager  # noqa: F401
    import ansible.parsing.dataloader  # noqa: F401
    import ansible.playbook  # noqa: F401
    import ansible.plugins.loader  # noqa: F401
    import ansible.template  # noqa: F401
    import ansible.vars.manager  # noqa: F401

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    # Listening before the path appears: a client waits for the path, and one
    # that connected between the rename and listen() was refused.
    listener.listen(16)
    os.rename(path + ".tmp", path)
    while True:
        conn = listener.accept()[0]
        if os.fork() == 0:
            listener.close()
            try:
                _handle(conn)
            finally:
                os._exit(0)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
