"""zookeeper-shell: its command line, ZooKeeperMain's tokenizer, Commons CLI option parsing, PathUtils' path
rules, and every line as ZooKeeper 3.5.9 prints it; the Shell's commands over a fake session (the real one is
tests/integration/test_zookeeper_tools.py)."""
from __future__ import annotations

import io
import time

import pytest

from brokers.zk.shell_client import FullStat, ZkCommandError, ZnodeAcl
from scripts.tools.zookeeper_shell import syntax
from scripts.tools.zookeeper_shell.command import Quit, Shell
from scripts.tools.zookeeper_shell.syntax import CliError, UsageError

STAT = FullStat(czxid=0x1A, mzxid=0x1B, ctime=0, mtime=0, version=2, cversion=1, aversion=0,
                ephemeral_owner=0x1000ABC, data_length=5, num_children=3, pzxid=0x1C)


# -- the command line ------------------------------------------------------------------------------
def test_argv():
    assert syntax.parse_argv(["h:2181"]) == syntax.ShellArgs("h:2181")
    assert syntax.parse_argv(["h:2181/kafka", "ls", "-s", "/"]) == syntax.ShellArgs("h:2181/kafka", command=["ls", "-s", "/"])
    assert syntax.parse_argv(["h:1", "-zk-tls-config-file", "t.props", "get", "/a"]) == syntax.ShellArgs(
        "h:1", "t.props", command=["get", "/a"])
    assert syntax.parse_argv(["h:1", "-timeout", "5000", "-r", "stat", "/"]) == syntax.ShellArgs(
        "h:1", timeout_ms=5000, command=["stat", "/"])


@pytest.mark.parametrize("argv, message", [
    ([], "USAGE: zookeeper-shell zookeeper_host:port[/path] [-zk-tls-config-file file] [args...]"),
    (["h:1", "ls", "-zk-tls-config-file"], "Error: no filename provided with option -zk-tls-config-file"),
    (["h:1", "-timeout"], "Error: no argument found for option -timeout"),
    (["h:1", "-timeout", "soon"], "-timeout must be a positive number"),
])
def test_bad_argv(argv, message):
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("]", r"\]")):
        syntax.parse_argv(argv)


@pytest.mark.parametrize("line, words", [
    ("ls /", ["ls", "/"]),
    ("  create   /a   b  ", ["create", "/a", "b"]),
    ('create /a "hello world"', ["create", "/a", "hello world"]),
    ("set /a 'it is' x", ["set", "/a", "it is", "x"]),
    ('set /a {"k":"v"}', ["set", "/a", '{"k":"v"}']),
    ("", []),
])
def test_tokenize(line, words):
    assert syntax.tokenize(line) == words


# -- one command's options -------------------------------------------------------------------------
def test_options_anywhere_and_bundled():
    cmd = syntax.parse_command(["create", "-es", "/a", "data"])
    assert (cmd.flags, cmd.args) == ({"e", "s"}, ["/a", "data"])
    cmd = syntax.parse_command(["ls", "/", "-s"])
    assert (cmd.flags, cmd.args) == ({"s"}, ["/"])
    cmd = syntax.parse_command(["set", "-v3", "/a", "x"])
    assert (cmd.values, cmd.args) == ({"v": "3"}, ["/a", "x"])
    cmd = syntax.parse_command(["delete", "-v", "7", "/a"])
    assert syntax.int_value(cmd, "v") == 7
    assert syntax.parse_command(["create", "/a", "--", "-1"]).args == ["/a", "-1"]


@pytest.mark.parametrize("words, message", [
    (["ls", "-x", "/"], "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x"),
    (["ls", "-sx", "/"], "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -sx"),
    (["create", "/a", "-1"], "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -1"),
    (["set", "/a", "x", "-v"], "org.apache.commons.cli.MissingArgumentException: Missing argument for option: v"),
    (["get"], "get [-s] [-w] path"),
    (["ls"], "ls [-s] [-w] [-R] path"),
    (["set", "/a"], "set [-s] [-v version] path data"),
])
def test_bad_command_words(words, message):
    with pytest.raises(CliError) as raised:
        syntax.parse_command(words)
    assert str(raised.value) == message


def test_deprecated_watch_argument_warns_and_means_w():
    cmd = syntax.parse_command(["ls", "/", "true"])
    assert "w" in cmd.flags and cmd.warnings == ["'ls path [watch]' has been deprecated. Please use 'ls [-w] path' instead."]
    cmd = syntax.parse_command(["get", "/", "1"])
    assert cmd.warnings == ["'get path [watch]' has been deprecated. Please use 'get [-s] [-w] path' instead."]
    assert syntax.parse_command(["delete", "/a", "3"]).warnings == [
        "'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead."]


def test_int_values_fail_as_java_does():
    with pytest.raises(CliError, match='java.lang.NumberFormatException: For input string: "x1"'):
        syntax.int_value(syntax.parse_command(["set", "-v", "x1", "/a", "d"]), "v")
    with pytest.raises(CliError, match="NumberFormatException"):
        syntax.int_value(syntax.parse_command(["set", "-v", "99999999999", "/a", "d"]), "v")


@pytest.mark.parametrize("path, reason", [
    ("/", None), ("/a/b.c", None), ("/a/..b", None), ("/a/.b", None),
    ("", "Path length must be > 0"),
    ("a", "Path must start with / character"),
    ("/a/", "Path must not end with / character"),
    ("/a//b", "empty node name specified @3"),
    ("/a/./b", "relative paths not allowed @3"),
    ("/a/..", "relative paths not allowed @4"),
    ("/a\x01", "invalid character @2"),
    ("/a\0", "null character not allowed @2"),
])
def test_paths(path, reason):
    if reason is None:
        syntax.check_path(path)
    else:
        with pytest.raises(CliError) as raised:
            syntax.check_path(path)
        assert str(raised.value) == f'Invalid path string "{path}" caused by {reason}'


def test_a_sequential_path_may_end_with_a_slash():
    syntax.check_path("/queue/", sequential=True)


def test_acl_argument():
    assert syntax.parse_acl("world:anyone:cdrwa,digest:u:hash=:r") == (
        [("world", "anyone", 31), ("digest", "u:hash=", 1)], [])
    assert syntax.parse_acl("bad,ip:1.2.3.4:rx") == (
        [("ip", "1.2.3.4", 1)], ["bad does not have the form scheme:id:perm", "Unknown perm type: x"])


# -- output ----------------------------------------------------------------------------------------
def test_stat_lines_as_statprinter(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        assert syntax.stat_lines(STAT) == [
            "cZxid = 0x1a", "ctime = Thu Jan 01 00:00:00 UTC 1970", "mZxid = 0x1b",
            "mtime = Thu Jan 01 00:00:00 UTC 1970", "pZxid = 0x1c", "cversion = 1", "dataVersion = 2",
            "aclVersion = 0", "ephemeralOwner = 0x1000abc", "dataLength = 5", "numChildren = 3"]
        assert syntax.java_date(1_700_000_000_000) == "Tue Nov 14 22:13:20 UTC 2023"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_ls_output_and_its_35_quirk_with_stat():
    assert syntax.ls_text(["b", "a"]) == "[a, b]\n"
    assert syntax.ls_text([]) == "[]\n"
    with_stat = syntax.ls_text(["a"], STAT)
    assert with_stat.startswith("[a]cZxid = 0x1a\n") and with_stat.endswith("numChildren = 3\n\n")


def test_acl_lines_and_perm_strings():
    assert syntax.acl_lines([ZnodeAcl("world", "anyone", 31), ZnodeAcl("digest", "kafka:x,y%", 1)]) == [
        "'world,'anyone", ": cdrwa", "'digest,'kafka:x%2Cy%25", ": r"]
    assert syntax.perm_string(0) == "" and syntax.perm_string(6) == "cw"


@pytest.mark.parametrize("command, code, expected", [
    ("ls", -101, "Node does not exist: /p"),
    ("stat", -102, "Authentication is not valid : /p"),
    ("delete", -111, "Node not empty: /p"),
    ("delete", -103, "version No is not valid : /p"),
    ("create", -110, "Node already exists: /p"),
    ("create", -108, "Ephemerals cannot have children: /p"),
    ("set", -4, "KeeperErrorCode = ConnectionLoss for /p"),
    ("get", -101, "org.apache.zookeeper.KeeperException$NoNodeException: KeeperErrorCode = NoNode for /p"),
    ("get", -102, "org.apache.zookeeper.KeeperException$NoAuthException: KeeperErrorCode = NoAuth for /p"),
    ("ls", -999, "KeeperErrorCode = Unknown error -999 for /p"),
])
def test_error_messages(command, code, expected):
    assert syntax.error_message(command, code, "/p") == expected


def test_watch_lines_and_prompt():
    assert syntax.watch_lines("NodeDataChanged", "SyncConnected", "/a") == [
        "", "WATCHER::", "", "WatchedEvent state:SyncConnected type:NodeDataChanged path:/a"]
    assert syntax.watch_lines("None", "SyncConnected", None)[-1].endswith("path:null")
    assert syntax.prompt("h:1", "CONNECTED", 3) == "[zk: h:1(CONNECTED) 3] "


# -- the Shell over a fake session -------------------------------------------------------------------
class FakeClient:
    state = "CONNECTED"

    def __init__(self):
        self.nodes = {"/": (b"", ["a"]), "/a": (b"hello", ["x"]), "/a/x": (None, [])}
        self.created = []

    def _node(self, path):
        if path not in self.nodes:
            raise ZkCommandError(-101, path)
        return self.nodes[path]

    def get(self, path, watch=None):
        return self._node(path)[0], STAT

    def children(self, path, watch=None):
        return list(self._node(path)[1]), STAT

    def exists(self, path, watch=None):
        return STAT if path in self.nodes else None

    def create(self, path, data, acl=None, *, ephemeral=False, sequential=False):
        if acl == []:
            raise ZkCommandError(-114, path)
        self.created.append((path, data, acl, ephemeral, sequential))
        return path + ("0000000001" if sequential else "")

    def get_acl(self, path):
        return [ZnodeAcl("world", "anyone", 31)], STAT


def run(words, client=None):
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(client or FakeClient(), "h:1", out, err)
    code = shell.execute(words)
    return code, out.getvalue(), err.getvalue()


def test_shell_commands():
    assert run(["get", "/a"]) == (0, "hello\n", "")
    assert run(["get", "/a/x"]) == (0, "null\n", "")
    assert run(["ls", "-R", "/"])[1] == "/\n/a\n/a/x\n"
    assert run(["getAcl", "/a"])[1] == "'world,'anyone\n: cdrwa\n"
    assert run(["stat", "/nope"]) == (1, "", "Node does not exist: /nope\n")
    assert run(["ls", "a"]) == (1, "", 'Invalid path string "a" caused by Path must start with / character\n')


def test_shell_create():
    client = FakeClient()
    assert run(["create", "-s", "-e", "/q/", "d"], client) == (0, "", "Created /q/0000000001\n")
    assert client.created == [("/q/", b"d", None, True, True)]
    assert run(["create", "/n"], client)[2] == "Created /n\n" and client.created[-1][1] is None
    assert run(["create", "/acl", "d", "digest:u:h:rw"], client)[0] == 0
    assert client.created[-1][2] == [ZnodeAcl("digest", "u:h", 3)]
    assert run(["create", "/bad", "d", "oops"], client) == (
        1, "", "oops does not have the form scheme:id:perm\nKeeperErrorCode = InvalidACL for /bad\n"
               "Acl is not valid : /bad\n")
    assert run(["create", "-c", "/c"], client)[0] == 1


def test_unknown_command_prints_usage_and_quit_stops():
    code, out, err = run(["frob", "/"])
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == "ZooKeeper -server host:port [-zk-tls-config-file <file>] cmd args"
    assert "\tls [-s] [-w] [-R] path" in lines and lines[-1] == "Command not found frob"
    with pytest.raises(Quit):
        run(["quit"])


def test_reading_commands_from_a_pipe_prints_no_prompt():
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(FakeClient(), "h:1", out, err)
    assert shell.read_commands(io.StringIO("get /a\n\n   \nls /nope\nls /\n")) == 0
    assert out.getvalue() == "hello\n[a]\n" and err.getvalue() == "Node does not exist: /nope\n"
    assert shell.count == 3
