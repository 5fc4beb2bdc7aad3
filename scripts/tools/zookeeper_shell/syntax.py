"""zookeeper-shell's pure side: the command line, command parsing and every line printed, as ZooKeeper 3.5.9's
``ZooKeeperMain`` (the CLI Kafka 2.8 ships, through ``ZooKeeperMainWithTlsSupportForKafka``) prints them.

* ``parse_argv``: ``host:port[/chroot] [-zk-tls-config-file FILE] [-timeout MS] [cmd args...]``.
* ``tokenize``: a stdin line into words (ZooKeeperMain's ``ARGS_PATTERN``: "..." and '...' group, quotes dropped).
* ``parse_command``: Commons CLI's PosixParser over one command's options (``ls -s /``, ``create -e -s /p data``);
  ``CliError`` carries ZooKeeper's message (``org.apache.commons.cli.UnrecognizedOptionException: ...``, the
  command's usage when arguments are missing, ``Invalid path string ...`` from ``PathUtils.validatePath``).
* ``stat_lines`` (``StatPrinter``: ``cZxid = 0x...``, dates as Java's ``Date.toString``), ``ls_text``
  (``[a, b]``; with ``-s`` 3.5's own quirk, the first stat line glued to the ``]`` and a blank line after),
  ``acl_lines`` (``'world,'anyone`` then ``: cdrwa``), ``error_message`` (``CliWrapperException``'s
  ``Node does not exist: /p``; ``get`` prints the exception itself, as 3.5.9 does:
  ``org.apache.zookeeper.KeeperException$NoNodeException: KeeperErrorCode = NoNode for /p``).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

TLS_OPTION = "-zk-tls-config-file"
USAGE = f"USAGE: zookeeper-shell zookeeper_host:port[/path] [{TLS_OPTION} file] [args...]"
DEFAULT_TIMEOUT_MS = 30000
# name -> (ZooKeeper's usage text, flags, options taking a value, positional arguments needed incl. the name)
COMMANDS: dict[str, tuple[str, str, str, int]] = {
    "create": ("[-s] [-e] [-c] [-t ttl] path [data] [acl]", "esc", "t", 2),
    "delete": ("[-v version] path", "", "v", 2),
    "deleteall": ("path", "", "", 2),
    "get": ("[-s] [-w] path", "sw", "", 2),
    "getAcl": ("[-s] path", "s", "", 2),
    "ls": ("[-s] [-w] [-R] path", "swR", "", 2),
    "quit": ("", "", "", 1),
    "set": ("[-s] [-v version] path data", "s", "v", 3),
    "stat": ("[-w] path", "w", "", 2),
}
WATCH_COMPAT = ("ls", "get", "stat")  # 'cmd path watch' (deprecated) means -w
PERMS = (("c", 4), ("d", 8), ("r", 1), ("w", 2), ("a", 16))  # ZooDefs.Perms, in getAcl's order
CODES = {  # KeeperException.Code -> (exception class, getCodeMessage)
    -1: ("SystemErrorException", "SystemError"), -2: ("RuntimeInconsistencyException", "RuntimeInconsistency"),
    -3: ("DataInconsistencyException", "DataInconsistency"), -4: ("ConnectionLossException", "ConnectionLoss"),
    -5: ("MarshallingErrorException", "MarshallingError"), -6: ("UnimplementedException", "Unimplemented"),
    -7: ("OperationTimeoutException", "OperationTimeout"), -8: ("BadArgumentsException", "BadArguments"),
    -13: ("NewConfigNoQuorum", "NewConfigNoQuorum"), -14: ("ReconfigInProgress", "ReconfigInProgress"),
    -100: ("APIErrorException", "APIError"), -101: ("NoNodeException", "NoNode"),
    -102: ("NoAuthException", "NoAuth"), -103: ("BadVersionException", "BadVersion"),
    -108: ("NoChildrenForEphemeralsException", "NoChildrenForEphemerals"),
    -110: ("NodeExistsException", "NodeExists"), -111: ("NotEmptyException", "Directory not empty"),
    -112: ("SessionExpiredException", "Session expired"), -113: ("InvalidCallbackException", "Invalid callback"),
    -114: ("InvalidACLException", "InvalidACL"), -115: ("AuthFailedException", "AuthFailed"),
    -118: ("SessionMovedException", "Session moved"), -119: ("NotReadOnlyException", "Not a read-only call"),
    -120: ("EphemeralOnLocalSessionException", "Ephemeral node on local session"),
    -121: ("NoWatcherException", "No such watcher"), -123: ("ReconfigDisabledException", "Reconfig is disabled"),
}
WRAPPED = {  # CliWrapperException's own messages
    -101: "Node does not exist: ", -108: "Ephemerals cannot have children: ", -110: "Node already exists: ",
    -111: "Node not empty: ", -119: "Not a read-only call: ", -114: "Acl is not valid : ",
    -102: "Authentication is not valid : ", -8: "Arguments are not valid : ", -103: "version No is not valid : ",
}


class UsageError(ValueError):
    """A bad command line: the message is printed alone, exit 1."""


class CliError(Exception):
    """A command that failed before or while running: ZooKeeperMain prints the message to stderr (exit 1)."""


@dataclass(frozen=True)
class ShellArgs:
    server: str
    tls_config_file: str | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    command: list[str] | None = None  # None: read commands from stdin


@dataclass
class Command:
    name: str
    flags: set[str] = field(default_factory=set)
    values: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)  # the positional words after the name
    warnings: list[str] = field(default_factory=list)  # printed to stderr before it runs


def parse_argv(argv: list[str]) -> ShellArgs:
    """zookeeper-shell's arguments; the first is the server (Kafka's script passes ``-server`` + it)."""
    if not argv:
        raise UsageError(USAGE)
    server, rest = argv[0], list(argv[1:])
    tls_file = None
    if TLS_OPTION in rest:
        at = rest.index(TLS_OPTION)
        if at == len(rest) - 1:
            raise UsageError(f"Error: no filename provided with option {TLS_OPTION}")
        tls_file = rest[at + 1]
        del rest[at:at + 2]
    timeout_ms = DEFAULT_TIMEOUT_MS
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option not in ("-timeout", "-server"):
            continue  # ZooKeeperMain skips options it does not know (-r: read-only, unsupported here)
        if not rest:
            raise UsageError(f"Error: no argument found for option {option}")
        value = rest.pop(0)
        if option == "-server":
            server = value
        elif not value.isdigit() or int(value) == 0:
            raise UsageError(f"Error: -timeout must be a positive number of milliseconds, got {value!r}")
        else:
            timeout_ms = int(value)
    return ShellArgs(server, tls_file, timeout_ms, rest or None)


_ARGS = re.compile(r"""\s*([^"']\S*|"[^"]*"|'[^']*')\s*""")
_QUOTED = re.compile(r"""^(['"])(.*)(\1)$""", re.S)


def tokenize(line: str) -> list[str]:
    """A command line as ZooKeeperMain splits it (surrounding quotes of a word removed)."""
    words = []
    for match in _ARGS.finditer(line):
        word = match.group(1)
        quoted = _QUOTED.match(word)
        words.append(quoted.group(2) if quoted else word)
    return words


def usage_lines() -> list[str]:
    """What an unknown or missing command prints first (Kafka's kafkaTlsUsage), to stderr."""
    return [f"ZooKeeper -server host:port [{TLS_OPTION} <file>] cmd args",
            *(f"\t{name} {COMMANDS[name][0]}" for name in sorted(COMMANDS))]


def _burst(word: str, flags: str, valued: str) -> list[str]:
    """PosixParser's tokens for one word (``-es`` -> ``-e -s``; ``-v3`` -> ``-v 3``; ``-sx`` -> ``-s -sx``)."""
    known = set(flags) | set(valued)
    if word in ("-", "--") or not word.startswith("-") or len(word) == 2:
        return [word]
    out = []
    for i, ch in enumerate(word[1:], 1):
        if ch not in known:
            return [*out, word]  # Commons CLI keeps the whole word: an unrecognized option
        out.append("-" + ch)
        if ch in valued and i + 1 < len(word):
            return [*out, word[i + 1:]]
    return out


def parse_command(words: list[str]) -> Command:
    """One command's words (its name first) -> Command; CliError with ZooKeeper's message when they are wrong."""
    name = words[0]
    usage, flags, valued, needed = COMMANDS[name]
    tokens = [t for word in words[1:] for t in _burst(word, flags, valued)]
    command, rest = Command(name), False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if rest or token == "-" or not token.startswith("-"):
            command.args.append(token)
        elif token == "--":
            rest = True
        elif token[1:] in valued and len(token) == 2:
            if i >= len(tokens):
                raise CliError(f"org.apache.commons.cli.MissingArgumentException: Missing argument for option: {token[1:]}")
            command.values[token[1:]] = tokens[i]
            i += 1
        elif token[1:] in flags and len(token) == 2:
            command.flags.add(token[1:])
        else:
            raise CliError(f"org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: {token}")
    if 1 + len(command.args) < needed:
        raise CliError(f"{name} {usage}")
    if name in WATCH_COMPAT and len(command.args) > 1:
        command.warnings.append(f"'{name} path [watch]' has been deprecated. Please use '{name} [-w] path' instead."
                                if name != "get" else
                                "'get path [watch]' has been deprecated. Please use 'get [-s] [-w] path' instead.")
        command.flags.add("w")
    if name == "delete" and len(command.args) > 1:
        command.warnings.append("'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.")
    return command


def int_value(command: Command, option: str) -> int:
    """-v / -t: Java's Integer.parseInt (a bad number is the exception text, as the Java CLI dies with it)."""
    text = command.values[option]
    if not re.fullmatch(r"[+-]?\d+", text) or not -2**31 <= int(text) < 2**31:
        raise CliError(f'java.lang.NumberFormatException: For input string: "{text}"')
    return int(text)


def check_path(path: str, sequential: bool = False) -> None:
    """ZooKeeper's ``PathUtils.validatePath``: CliError ``Invalid path string "p" caused by <reason>``."""
    reason = _path_problem(path + "1" if sequential else path)
    if reason:
        raise CliError(f'Invalid path string "{path}" caused by {reason}')


def _path_problem(path: str) -> str | None:
    if not path:
        return "Path length must be > 0"
    if path[0] != "/":
        return "Path must start with / character"
    if len(path) == 1:
        return None
    if path[-1] == "/":
        return "Path must not end with / character"
    for i in range(1, len(path)):
        c, last = path[i], path[i - 1]
        ends_name = i + 1 == len(path) or path[i + 1] == "/"
        if c == "\0":
            return f"null character not allowed @{i}"
        if c == "/" and last == "/":
            return f"empty node name specified @{i}"
        if c == "." and last == "." and path[i - 2] == "/" and ends_name:
            return f"relative paths not allowed @{i}"
        if c == "." and last == "/" and ends_name:
            return f"relative paths not allowed @{i}"
        if ("\u0000" < c <= "\u001f" or "\u007f" < c <= "\u009f" or "\ud800" < c <= "\uf8ff"
                or "\ufff0" < c <= "\uffff"):
            return f"invalid character @{i}"
    return None


def parse_acl(text: str) -> tuple[list[tuple[str, str, int]], list[str]]:
    """``create``'s acl argument (ZooKeeper's AclParser): ``scheme:id:perms,...`` -> ([(scheme, id, perms)],
    stderr lines for the parts it skipped or the permissions it did not know)."""
    acls, complaints = [], []
    for part in text.split(","):
        first, last = part.find(":"), part.rfind(":")
        if first == -1 or first == last:
            complaints.append(f"{part} does not have the form scheme:id:perm")
            continue
        perms = 0
        for ch in part[last + 1:]:
            bit = dict((c, b) for c, b in PERMS).get(ch)
            if bit is None:
                complaints.append(f"Unknown perm type: {ch}")
            else:
                perms |= bit
        acls.append((part[:first], part[first + 1:last], perms))
    return acls, complaints


# -- output ----------------------------------------------------------------------------------------
def java_date(ms: int) -> str:
    """Java's ``new Date(ms).toString()``: ``Thu Jan 01 00:00:00 UTC 1970`` in the local time zone."""
    return time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(ms / 1000))


def stat_lines(stat) -> list[str]:
    """ZooKeeper's StatPrinter (``stat`` has FullStat's fields)."""
    return [f"cZxid = {stat.czxid:#x}", f"ctime = {java_date(stat.ctime)}", f"mZxid = {stat.mzxid:#x}",
            f"mtime = {java_date(stat.mtime)}", f"pZxid = {stat.pzxid:#x}", f"cversion = {stat.cversion}",
            f"dataVersion = {stat.version}", f"aclVersion = {stat.aversion}",
            f"ephemeralOwner = {stat.ephemeral_owner & 0xFFFFFFFFFFFFFFFF:#x}",
            f"dataLength = {stat.data_length}", f"numChildren = {stat.num_children}"]


def ls_text(children: list[str], stat=None) -> str:
    """``ls``'s output, newline included: ``[a, b]``; with ``-s`` 3.5.9 appends the stat lines right after
    the ``]`` and a newline after them (so a blank line ends it)."""
    text = "[" + ", ".join(sorted(children)) + "]"
    if stat is not None:
        text += "".join(line + "\n" for line in stat_lines(stat))
    return text + "\n"


def _csv(text: str) -> str:
    """Jute's CSV string: a leading quote, ``\\0 \\n \\r , } %`` percent-escaped."""
    escapes = {"\0": "%00", "\n": "%0A", "\r": "%0D", ",": "%2C", "}": "%7D", "%": "%25"}
    return "'" + "".join(escapes.get(c, c) for c in text)


def perm_string(perms: int) -> str:
    return "".join(ch for ch, bit in PERMS if perms & bit)


def acl_lines(acls) -> list[str]:
    """getAcl: the Id record's toString (``'scheme,'id`` and a newline), then ``: perms``."""
    lines = []
    for acl in acls:
        lines += [f"{_csv(acl.scheme)},{_csv(acl.id)}", f": {perm_string(acl.perms)}"]
    return lines


def keeper_exception(code: int, path: str) -> str:
    """``KeeperException.toString()``: what ``get`` (a plain CliException in 3.5.9) prints."""
    cls, message = CODES.get(code, ("KeeperException", f"Unknown error {code}"))
    return f"org.apache.zookeeper.KeeperException${cls}: KeeperErrorCode = {message} for {path}"


def error_message(command: str, code: int, path: str) -> str:
    """The stderr line of a failed request of ``command``: CliWrapperException's text (its cause's message
    for the codes it has none for); ``get`` wraps the exception itself in 3.5.9, so it prints its toString."""
    if command == "get":
        return keeper_exception(code, path)
    if code in WRAPPED:
        return WRAPPED[code] + path
    return keeper_exception(code, path).split(": ", 1)[1]


def watch_lines(event_type: str, state: str, path: str | None) -> list[str]:
    """ZooKeeperMain's watcher: ``printMessage("WATCHER::")`` then the event, each after a blank line."""
    return ["", "WATCHER::", "", f"WatchedEvent state:{state} type:{event_type} path:{'null' if path is None else path}"]


def prompt(server: str, state: str, count: int) -> str:
    return f"[zk: {server}({state}) {count}] "
