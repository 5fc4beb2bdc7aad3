"""Java's ``SimpleDateFormat`` for ``kafka-consumer-perf-test --date-format`` (pure): Kafka prints its
``start.time`` / ``end.time`` / ``time`` columns with it, by default ``yyyy-MM-dd HH:mm:ss:SSS``
(``2026-11-28 13:05:09:042``), in the machine's time zone and Java's default (US English) locale.

``compile_pattern`` reads a pattern as Java does: letters are fields (a run of one letter is one field, its
length chooses the form), text between single quotes is literal (``''`` is a quote), anything else is
literal; an unknown letter is Java's ``Illegal pattern character 'q'``, an open quote ``Unterminated
quote``. Fields: ``G`` era; ``y`` year (``yy``: two digits) and ``Y`` week year; ``M``/``L`` month
(``MMM`` Jan, ``MMMM`` January, else a number); ``w``/``W`` week in year / month (weeks start on Sunday,
week 1 holds January 1st / the 1st, as in the US locale); ``D`` day in year; ``d`` day in month; ``F``
day-of-week in month; ``E`` day name (``EEEE`` Monday, else Mon); ``u`` day number (1 = Monday); ``a``
AM/PM; ``H`` (0-23), ``k`` (1-24), ``K`` (0-11), ``h`` (1-12) hours; ``m`` minutes; ``s`` seconds; ``S``
milliseconds; ``z`` the zone's abbreviation; ``Z`` ``+0100``; ``X`` ``+01``, ``+0100``, ``+01:00`` (``Z`` at
UTC). Numbers are zero-padded to the field's length.
"""
from __future__ import annotations

from datetime import date, datetime, timedelta, tzinfo

DEFAULT_PATTERN = "yyyy-MM-dd HH:mm:ss:SSS"
LETTERS = frozenset("GyYMLwWDdFEuaHkKhmsSzZX")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

Token = tuple[str, int | str]  # ("lit", text) or (letter, count)


def compile_pattern(pattern: str) -> list[Token]:
    """The pattern's fields and literals; ValueError with Java's message for a bad pattern."""
    tokens: list[Token] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            text, i = _quoted(pattern, i)
            tokens.append(("lit", text))
        elif c.isascii() and c.isalpha():
            if c not in LETTERS:
                raise ValueError(f"Illegal pattern character '{c}'")
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            tokens.append((c, j - i))
            i = j
        else:
            tokens.append(("lit", c))
            i += 1
    return tokens


def _quoted(pattern: str, i: int) -> tuple[str, int]:
    """The literal that starts with the quote at ``i``, and the index after it."""
    if pattern.startswith("''", i):
        return "'", i + 2
    text, j = [], i + 1
    while j < len(pattern):
        if pattern[j] == "'":
            if pattern.startswith("''", j):
                text.append("'")
                j += 2
                continue
            return "".join(text), j + 1
        text.append(pattern[j])
        j += 1
    raise ValueError("Unterminated quote")


def _week_start(day: date) -> date:
    return day - timedelta(days=(day.weekday() + 1) % 7)  # the Sunday on or before ``day``


def week_fields(day: date) -> tuple[int, int]:
    """(week year, week of year) in the US locale: Sunday-first weeks, week 1 holds January 1st."""
    next_year = date(day.year + 1, 1, 1)
    if _week_start(day) == _week_start(next_year):
        return day.year + 1, 1
    return day.year, (day - _week_start(date(day.year, 1, 1))).days // 7 + 1


def _zone_offset(moment: datetime, iso: int | None) -> str:
    offset = moment.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    if iso is not None and minutes == 0:
        return "Z"
    sign, minutes = ("-" if minutes < 0 else "+"), abs(minutes)
    hours, rest = divmod(minutes, 60)
    if iso == 1:
        return f"{sign}{hours:02d}"
    if iso == 3:
        return f"{sign}{hours:02d}:{rest:02d}"
    return f"{sign}{hours:02d}{rest:02d}"


def _text(letter: str, count: int, moment: datetime, millis: int) -> str:
    if letter in "ML" and count >= 3:
        name = MONTHS[moment.month - 1]
        return name if count >= 4 else name[:3]
    if letter == "E":
        return DAYS[moment.weekday()] if count >= 4 else DAYS[moment.weekday()][:3]
    if letter == "a":
        return "AM" if moment.hour < 12 else "PM"
    if letter == "G":
        return "AD"
    if letter == "z":
        return moment.tzname() or _zone_offset(moment, None)
    if letter == "Z":
        return _zone_offset(moment, None)
    if count > 3:
        raise ValueError(f"invalid ISO 8601 format: length={count}")
    return _zone_offset(moment, count)


def _number(letter: str, moment: datetime, millis: int) -> int:
    week_year, week = week_fields(moment.date())
    return {"y": moment.year, "Y": week_year, "M": moment.month, "L": moment.month, "w": week,
            "W": (moment.day - 1 + (moment.replace(day=1).weekday() + 1) % 7) // 7 + 1,
            "D": moment.timetuple().tm_yday, "d": moment.day, "F": (moment.day - 1) // 7 + 1,
            "u": moment.isoweekday(), "H": moment.hour, "k": moment.hour or 24, "K": moment.hour % 12,
            "h": moment.hour % 12 or 12, "m": moment.minute, "s": moment.second, "S": millis}[letter]


def format_ms(tokens: list[Token], epoch_ms: int, zone: tzinfo | None = None) -> str:
    """The time ``epoch_ms`` (milliseconds since the epoch) in the pattern, in ``zone`` (default: local)."""
    seconds, millis = divmod(int(epoch_ms), 1000)
    moment = datetime.fromtimestamp(seconds, zone) if zone is not None else datetime.fromtimestamp(seconds).astimezone()
    out = []
    for letter, count in tokens:
        if letter == "lit":
            out.append(str(count))
        elif letter in "GEazZX" or (letter in "ML" and int(count) >= 3):
            out.append(_text(letter, int(count), moment, millis))
        elif letter in "yY" and count == 2:
            out.append(f"{_number(letter, moment, millis) % 100:02d}")
        else:
            out.append(f"{_number(letter, moment, millis):0{count}d}")
    return "".join(out)


class DateFormat:
    """A compiled ``SimpleDateFormat`` pattern: ``DateFormat(pattern).format(epoch_ms)``."""

    def __init__(self, pattern: str = DEFAULT_PATTERN, zone: tzinfo | None = None):
        self.tokens = compile_pattern(pattern)
        self.zone = zone
        if any(letter == "X" and int(count) > 3 for letter, count in self.tokens):
            raise ValueError(f"invalid ISO 8601 format: length={max(int(c) for l, c in self.tokens if l == 'X')}")

    def format(self, epoch_ms: int) -> str:
        return format_ms(self.tokens, epoch_ms, self.zone)
