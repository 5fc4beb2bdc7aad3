"""zookeeper-shell's I/O: connect (``scripts.tools.common.zk_client``: KAFKA_OPTS' JAAS ``Client`` section,
``-zk-tls-config-file``), run one command or every line of stdin, print as ZooKeeperMain does.

Streams as in ZooKeeper 3.5.9: results on stdout; ``Created /p``, deprecation warnings and errors on stderr.
Exit code: the last command's (0, or 1 when it failed), as ``System.exit(exitCode)``.
"""
from __future__ import annotations

import sys
import threading
from typing import TextIO

from brokers.zk.errors import ZkError
from brokers.zk.shell_client import ShellClient, ShellWatchEvent, ZkCommandError, ZnodeAcl
from scripts.tools.common import zk_client
from scripts.tools.common.zk_security import ZkClientIdentity, ZkSecurityError
from scripts.tools.zookeeper_shell.syntax import (COMMANDS, TLS_OPTION, CliError, Command, UsageError, acl_lines,
                                                  check_path, error_message, int_value, keeper_exception, ls_text,
                                                  parse_acl, parse_argv, parse_command, prompt, stat_lines, tokenize,
                                                  usage_lines, watch_lines)

INVALID_ACL = -114


class Quit(Exception):
    pass


class Shell:
    """One session's commands; watch events arrive on kazoo's thread, so every print holds the lock."""

    def __init__(self, client: ShellClient, server: str, out: TextIO | None = None, err: TextIO | None = None):
        self.client, self.server, self.out, self.err = client, server, out or sys.stdout, err or sys.stderr
        self.exit_code = 0
        self.count = 0
        self._lock = threading.Lock()

    def write(self, lines: list[str] | str, stream: TextIO | None = None) -> None:
        text = lines if isinstance(lines, str) else "".join(line + "\n" for line in lines)
        with self._lock:
            (stream or self.out).write(text)
            (stream or self.out).flush()

    def on_watch(self, event: ShellWatchEvent) -> None:
        self.write(watch_lines(event.type, event.state, event.path))

    def execute(self, words: list[str]) -> int:
        """Run one command (its words); returns and records its exit code. Quit ends the shell."""
        if words[0] not in COMMANDS:
            self.write([*usage_lines(), f"Command not found {words[0]}"], self.err)
            self.exit_code = 1
            return 1
        if words[0] == "quit":
            raise Quit()
        try:
            command = parse_command(words)
            self.write(command.warnings, self.err)
            getattr(self, "_" + command.name.lower())(command)
            self.exit_code = 0
        except CliError as exc:
            self.write([str(exc)], self.err)
            self.exit_code = 1
        except ZkCommandError as exc:
            self.write([error_message(words[0], exc.code, exc.path)], self.err)
            self.exit_code = 1
        return self.exit_code

    def _path(self, command: Command, sequential: bool = False) -> str:
        check_path(command.args[0], sequential)
        return command.args[0]

    def _watch(self, command: Command):
        return self.on_watch if "w" in command.flags else None

    # -- the commands ------------------------------------------------------------------------------
    def _ls(self, command: Command) -> None:
        path = self._path(command)
        if "R" in command.flags:
            self.client.exists(path, self._watch(command))
            self.write(self._tree(path, self._watch(command)))
            return
        children, stat = self.client.children(path, self._watch(command))
        self.write(ls_text(children, stat if "s" in command.flags else None))

    def _tree(self, root: str, watch) -> list[str]:
        """``ls -R``: ZKUtil.visitSubTreeDFS's order (a node's children listed, then each child's subtree)."""
        lines, stack = [root], [root]
        while stack:
            path = stack.pop(0)
            try:
                children, _ = self.client.children(path, watch)
            except ZkCommandError:
                continue  # deleted while we walked: ZooKeeper's CLI ignores it too
            paths = [(path.rstrip("/") + "/" + child) for child in sorted(children)]
            lines += paths
            stack[:0] = paths
        return lines

    def _get(self, command: Command) -> None:
        data, stat = self.client.get(self._path(command), self._watch(command))
        self.write(["null" if data is None else data.decode("utf-8", errors="replace")])
        if "s" in command.flags:
            self.write(stat_lines(stat))

    def _stat(self, command: Command) -> None:
        path = self._path(command)
        stat = self.client.exists(path, self._watch(command))
        if stat is None:
            raise ZkCommandError(-101, path)
        self.write(stat_lines(stat))

    def _create(self, command: Command) -> None:
        if "c" in command.flags or "t" in command.values:
            raise CliError("create -c (container) and -t (TTL) nodes are not supported by zkafka's zookeeper-shell")
        path = self._path(command, sequential="s" in command.flags)
        data = command.args[1].encode() if len(command.args) > 1 else None
        acl = None
        if len(command.args) > 2:
            parsed, complaints = parse_acl(command.args[2])
            self.write(complaints, self.err)
            acl = [ZnodeAcl(scheme, ident, perms) for scheme, ident, perms in parsed]
        try:
            created = self.client.create(path, data, acl, ephemeral="e" in command.flags,
                                         sequential="s" in command.flags)
        except ZkCommandError as exc:
            if exc.code == INVALID_ACL:  # CreateCommand prints the exception's message first
                self.write([keeper_exception(exc.code, exc.path).split(": ", 1)[1]], self.err)
            raise
        self.write([f"Created {created}"], self.err)

    def _set(self, command: Command) -> None:
        version = int_value(command, "v") if "v" in command.values else -1
        stat = self.client.set(self._path(command), command.args[1].encode(), version)
        if "s" in command.flags:
            self.write(stat_lines(stat))

    def _delete(self, command: Command) -> None:
        version = int_value(command, "v") if "v" in command.values else -1
        self.client.delete(self._path(command), version)

    def _deleteall(self, command: Command) -> None:
        self.client.delete_all(self._path(command))

    def _getacl(self, command: Command) -> None:
        acls, stat = self.client.get_acl(self._path(command))
        self.write(acl_lines(acls))
        if "s" in command.flags:
            self.write(stat_lines(stat))

    # -- the two modes -----------------------------------------------------------------------------
    def read_commands(self, stdin: TextIO) -> int:
        """Every line of ``stdin`` (a prompt before each when it is a terminal); the last command's exit code."""
        interactive = stdin.isatty()
        while True:
            if interactive:
                self.write(prompt(self.server, self.client.state, self.count))
            line = stdin.readline()
            if not line:
                return self.exit_code
            words = tokenize(line.rstrip("\n")) if line.strip() else []  # blank lines: nothing to run
            if words:
                self.execute(words)
                self.count += 1


def connect(server: str, identity: ZkClientIdentity, timeout_ms: int, interactive: bool) -> ShellClient:
    print(f"Connecting to {server}", flush=True)
    if interactive:
        print("Welcome to ZooKeeper!\nJLine support is disabled", flush=True)
    client = zk_client.shell_client(server, identity, timeout_ms)
    client.start()
    print("\n".join(watch_lines("None", "SyncConnected", None)), flush=True)
    return client


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_argv(sys.argv[1:] if argv is None else argv)
        identity = zk_client.identity(args.tls_config_file, tls_flag=TLS_OPTION)
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except ZkSecurityError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    try:
        client = connect(args.server, identity, args.timeout_ms, args.command is None)
    except ZkError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    shell = Shell(client, args.server)
    try:
        if args.command is not None:
            return shell.execute(args.command)
        return shell.read_commands(sys.stdin)
    except Quit:
        return shell.exit_code
    except BrokenPipeError:
        return shell.exit_code
    finally:
        client.close()
