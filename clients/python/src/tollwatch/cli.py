"""``python -m tollwatch lookup|ip``: lookups from a shell or a dial plan, as ``tollwatch lookup`` in Node.

Exit status 0 seen, 1 not seen, 2 error (docs/cli.md); with several values, 0 when any was seen.
Credentials come from the environment: TOLLWATCH_URL, TOLLWATCH_CLIENT_ID,
TOLLWATCH_CLIENT_SECRET and the optional TOLLWATCH_AUDIENCE.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from .client import Tollwatch
from .errors import DeadlineExceeded, NetworkError, OAuthError, TollwatchError
from .retry import RetryPolicy
from .visible_text import terminal_json, visible_text

FOUND = 0
NOT_FOUND = 1
FAILED = 2

LOOKUP_RETRY = RetryPolicy(max_attempts=3, timeout=5.0, max_retry_after=5.0)
"""As the Node CLI's lookups: a few quick tries, and a server asking for more than a few seconds'
patience is an answer of its own (exit 2). The deadline (--timeout) usually ends them first."""

_NOT_A_NUMBER = "not a phone number: up to 64 digits, letters, * or #, optionally after + (tel: and sip: URIs and separators are accepted)"


class CommandError(Exception):
    """The command could not do its work: its message goes to standard error, and the exit status is 2."""


@dataclass(frozen=True)
class Output:
    """What one value's answer prints: its JSON, its lines, and whether it was seen (or invalid)."""

    json: Any
    text: str
    status: int


def main(
    argv: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Runs the command line; returns the exit status."""
    env = os.environ if env is None else env
    out = stdout or _tolerant(sys.stdout)
    err = stderr or _tolerant(sys.stderr)
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit:
        return exit.code if isinstance(exit.code, int) else FAILED
    try:
        values = _values(args.values, stdin or sys.stdin.buffer)
        # One value named on the command line is a single lookup, answered as the Node CLI does;
        # several, or any from standard input, are a bulk lookup, answered as a list.
        single = len(values) == 1 and "-" not in args.values
        outputs = _run(args, env, values, single)
    except Exception as failure:  # every failure of a lookup is exit 2 with one line, never a traceback
        err.write(f"tollwatch: {describe(failure, env)}\n")
        return FAILED
    if getattr(args, "json", False):
        out.write(terminal_json(outputs[0].json if single else {"results": [o.json for o in outputs]}) + "\n")
    else:
        out.write("\n".join(o.text for o in outputs) + "\n")
    statuses = {o.status for o in outputs}
    if FOUND in statuses:
        return FOUND
    return FAILED if FAILED in statuses else NOT_FOUND


def describe(failure: BaseException, env: Mapping[str, str]) -> str:
    """One line saying why a lookup failed; server text has its control characters escaped."""
    url = env.get("TOLLWATCH_URL") or "the server"
    if isinstance(failure, OAuthError):
        hint = ": check TOLLWATCH_CLIENT_ID and TOLLWATCH_CLIENT_SECRET" if failure.error == "invalid_client" else ""
        description = f": {failure.error_description}" if failure.error_description else ""
        wait = f"; try again in {failure.retry_after} s" if failure.retry_after is not None else ""
        return visible_text(f"the server refused the credentials ({failure.error}{description}){hint}{wait}")
    if isinstance(failure, TollwatchError):
        fields = "".join(f"; {e['field']}: {e['message']}" for e in failure.errors or [])
        wait = f"; try again in {failure.retry_after} s" if failure.retry_after is not None else ""
        return visible_text(f"{failure.detail or f'HTTP {failure.status}'} ({failure.error}){fields}{wait}")
    if isinstance(failure, DeadlineExceeded):
        return visible_text(f"no answer from {url} within {failure.deadline:g} s (--timeout)")
    if isinstance(failure, (NetworkError, CommandError, ValueError)):
        return visible_text(str(failure))
    return visible_text(f"{type(failure).__name__}: {failure}")


def _parser() -> argparse.ArgumentParser:
    # The options are read before the command or after it; SUPPRESS keeps a subcommand's
    # absent option from overwriting one given before the command.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print the server's answer as one JSON object")
    common.add_argument(
        "--timeout",
        type=_seconds,
        default=argparse.SUPPRESS,
        metavar="SECONDS",
        help="deadline of each lookup request, token request and retries included (default 1)",
    )
    parser = argparse.ArgumentParser(
        prog="python -m tollwatch",
        parents=[common],
        description="Look numbers and addresses up through a Tollwatch server. Exit status 0 seen, 1 not seen, 2 error.",
        epilog="Settings from the environment: TOLLWATCH_URL, TOLLWATCH_CLIENT_ID, TOLLWATCH_CLIENT_SECRET, TOLLWATCH_AUDIENCE (optional).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    lookup = commands.add_parser(
        "lookup", parents=[common], help="have attackers tried to call these numbers?", description="Values from standard input, one a line, with -."
    )
    lookup.add_argument("--private", action="store_true", help="send only 5 hex digits of each number's SHA-256 (a range lookup)")
    lookup.add_argument("values", nargs="+", metavar="NUMBER")
    ip = commands.add_parser(
        "ip", parents=[common], help="have these addresses probed honeypots?", description="Values from standard input, one a line, with -."
    )
    ip.add_argument("values", nargs="+", metavar="ADDRESS")
    return parser


def _run(args: argparse.Namespace, env: Mapping[str, str], values: list[str], one: bool) -> list[Output]:
    if not values:
        raise CommandError("no values given (standard input was empty)")
    client = _client(env)
    deadline: float | None = getattr(args, "timeout", None)
    with client:
        if args.command == "ip":
            if one:
                return [_ip_address(client.lookup_ip_address(values[0], deadline=deadline))]
            return [_ip_address(r) for r in client.lookup_ip_addresses(values, deadline=deadline)]
        if args.private:
            if one:
                return [_range(client.range_lookup(values[0], deadline=deadline))]
            return [_range_or_invalid(client.range_lookup, value, deadline) for value in values]
        if one:
            return [_phone_number(client.lookup_phone_number(values[0], deadline=deadline))]
        return [_phone_number(r) for r in client.lookup_phone_numbers(values, deadline=deadline)]


def _client(env: Mapping[str, str]) -> Tollwatch:
    missing = [name for name in ("TOLLWATCH_URL", "TOLLWATCH_CLIENT_ID", "TOLLWATCH_CLIENT_SECRET") if not env.get(name)]
    if missing:
        raise CommandError(f"set {', '.join(missing)} (the server's address and your API client's credentials)")
    # The server's own variable is a comma-separated list whose first entry is its default; one
    # exported for a server in the same shell should not become an audience nobody accepts.
    audience = (env.get("TOLLWATCH_AUDIENCE") or "").split(",")[0].strip() or None
    try:
        return Tollwatch(env["TOLLWATCH_URL"], env["TOLLWATCH_CLIENT_ID"], env["TOLLWATCH_CLIENT_SECRET"], audience=audience, retry=LOOKUP_RETRY)
    except ValueError:
        raise CommandError("TOLLWATCH_URL is not a URL (e.g. https://tollwatch.example.com)") from None


def _values(arguments: Sequence[str], stdin: IO[bytes]) -> list[str]:
    values: list[str] = []
    for argument in arguments:
        if argument != "-":
            values.append(argument)
            continue
        text = stdin.read().decode("utf-8", errors="replace")
        values.extend(line.strip() for line in text.splitlines() if line.strip())
    return values


def _phone_number(answer: Mapping[str, Any]) -> Output:
    if "error" in answer:
        return _invalid(answer)
    number = visible_text(str(answer["phone_number"]))
    if not answer["found"]:
        return Output(answer, f"{number}  not seen  {visible_text(answer['message'])}", NOT_FOUND)
    lines = [
        f"{number}  SEEN  {visible_text(answer['message'])}",
        *_score_lines(answer),
        f"  source addresses  {answer['source_ip_count']}",
        f"  SIP methods       {_counts(answer['sip_methods'])}",
        f"  written as        {visible_text(', '.join(answer['matched_forms']))}",
    ]
    if answer.get("e164"):
        where = ""
        if answer.get("country"):
            kind = f", {answer['number_type']}" if answer.get("number_type") else ""
            where = f" ({answer['country']}{kind})"
        lines.append(visible_text(f"  E.164             {answer['e164']}{where}"))
    return Output(answer, "\n".join(lines), FOUND)


def _ip_address(answer: Mapping[str, Any]) -> Output:
    if "error" in answer:
        return _invalid(answer)
    address = visible_text(str(answer["ip_address"]))
    if not answer["found"]:
        return Output(answer, f"{address}  not seen  {visible_text(answer['message'])}", NOT_FOUND)
    agents = ", ".join(f"{a['user_agent'] or '(none)'} {a['count']}" for a in answer["user_agents"])
    lines = [
        f"{address}  SEEN  {visible_text(answer['message'])}",
        *_score_lines(answer),
        f"  numbers dialled   {answer['called_number_count']}",
        f"  transports        {_counts(answer['transports'])}",
        f"  user agents       {visible_text(agents)}",
    ]
    return Output(answer, "\n".join(lines), FOUND)


def _range(answer: Mapping[str, Any]) -> Output:
    key = visible_text(answer["key"])
    if not answer["found"]:
        return Output(answer, f"{key}  not seen  (asked privately, by hash prefix)", NOT_FOUND)
    times = "time" if answer["seen_count"] == 1 else "times"
    return Output(answer, f"{key}  SEEN  {answer['seen_count']} {times}, score {answer['score']} (asked privately, by hash prefix)", FOUND)


def _range_or_invalid(lookup: Callable[..., Mapping[str, Any]], value: str, deadline: float | None) -> Output:
    try:
        return _range(lookup(value, deadline=deadline))
    except ValueError:
        return _invalid({"input": value, "error": "invalid_phone_number", "message": _NOT_A_NUMBER})


def _invalid(answer: Mapping[str, Any]) -> Output:
    return Output(answer, visible_text(f"{answer['input']}  invalid  {answer['message']}"), FAILED)


def _score_lines(answer: Mapping[str, Any]) -> list[str]:
    return [
        visible_text(f"  score             {answer['score']}: {'; '.join(answer['reasons'])}"),
        visible_text(f"  first seen        {answer['first_seen']}"),
        visible_text(f"  last seen         {answer['last_seen']}"),
    ]


def _counts(by_name: Mapping[str, int]) -> str:
    """``INVITE 3, OPTIONS 1``, most first."""
    ordered = sorted(by_name.items(), key=lambda item: -(item[1] or 0))
    return visible_text(", ".join(f"{name} {count or 0}" for name, count in ordered))


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _tolerant(stream: IO[str]) -> IO[str]:
    """The stream, writing what its encoding cannot (a C locale's ASCII) as escapes instead of failing."""
    if isinstance(stream, io.TextIOWrapper):
        stream.reconfigure(errors="backslashreplace")
    return stream
