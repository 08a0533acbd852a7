"""``python -m tollwatch`` as a dial plan or a script runs it, against the real server."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import unittest
from typing import Any, ClassVar

from support import SOURCE, ServerSettings, SocketServer, closed_port_url, server_settings
from test_server import PATIENT, event
from tollwatch import Tollwatch

# Every run but the deadline's own gets a generous one: a loaded machine is not an error.
TIMEOUT = ["--timeout", str(PATIENT)]


def tollwatch(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Runs the CLI from the checkout in a fresh interpreter, with only the given settings."""
    return subprocess.run(
        [sys.executable, "-m", "tollwatch", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(SOURCE), **env},
    )


class CliTest(unittest.TestCase):
    settings: ClassVar[ServerSettings]
    env: ClassVar[dict[str, str]]

    @classmethod
    def setUpClass(cls) -> None:
        cls.settings = server_settings()
        cls.env = {
            "TOLLWATCH_URL": cls.settings.url,
            "TOLLWATCH_CLIENT_ID": cls.settings.client_id,
            "TOLLWATCH_CLIENT_SECRET": cls.settings.client_secret,
        }

    def test_a_seen_number_exits_0_with_readable_lines(self) -> None:
        run = tollwatch(["lookup", self.settings.seen_number, *TIMEOUT], self.env)
        self.assertEqual((run.returncode, run.stderr), (0, ""), run.stderr)
        self.assertRegex(run.stdout, rf"^\{self.settings.seen_number}  SEEN  Attackers have tried to call this number")
        for label in ["score", "first seen", "last seen", "source addresses", "SIP methods", "written as"]:
            self.assertIn(f"\n  {label} ", run.stdout)

    def test_a_number_not_seen_exits_1(self) -> None:
        run = tollwatch(["lookup", "tel:+1-555-0100", *TIMEOUT], self.env)
        self.assertEqual((run.returncode, run.stderr), (1, ""))
        self.assertEqual(run.stdout, "+15550100  not seen  No probes to this number have been seen.\n")

    def test_json_prints_the_servers_answer_as_one_object_whatever_the_status(self) -> None:
        seen = tollwatch(["--json", "ip", self.settings.seen_ip, *TIMEOUT], self.env)
        self.assertEqual(seen.returncode, 0)
        self.assertEqual(len(seen.stdout.strip().splitlines()), 1)
        self.assertEqual(json.loads(seen.stdout)["ip_address"], self.settings.seen_ip)
        missing = tollwatch(["ip", "192.0.2.200", "--json", *TIMEOUT], self.env)
        self.assertEqual(missing.returncode, 1)
        self.assertEqual(json.loads(missing.stdout), {"ip_address": "192.0.2.200", "found": False, "message": json.loads(missing.stdout)["message"]})

    def test_values_from_standard_input_are_one_bulk_lookup_exit_0_when_any_was_seen(self) -> None:
        stdin = f"{self.settings.seen_number}\n\n+15550100999\n  not a number!  \n"
        run = tollwatch(["--json", "lookup", "-", *TIMEOUT], self.env, stdin)
        self.assertEqual(run.returncode, 0, run.stderr)
        results = json.loads(run.stdout)["results"]
        self.assertEqual([r.get("found") for r in results], [True, False, None])
        self.assertEqual(results[2]["error"], "invalid_phone_number")
        text = tollwatch(["lookup", "-", *TIMEOUT], self.env, stdin)
        self.assertEqual(text.returncode, 0)
        self.assertIn("+15550100999  not seen  ", text.stdout)
        self.assertIn("not a number!  invalid  ", text.stdout)

    def test_several_values_none_seen_exit_1_and_an_invalid_one_among_them_exit_2(self) -> None:
        none_seen = tollwatch(["ip", "192.0.2.201", "192.0.2.202", *TIMEOUT], self.env)
        self.assertEqual(none_seen.returncode, 1)
        self.assertEqual(len(none_seen.stdout.splitlines()), 2)
        invalid = tollwatch(["ip", "-", *TIMEOUT], self.env, "192.0.2.201\nnope\n")
        self.assertEqual(invalid.returncode, 2)
        self.assertIn("nope  invalid  ", invalid.stdout)

    def test_private_lookups_send_only_a_hash_prefix(self) -> None:
        seen = tollwatch(["lookup", "--private", "tel:" + self.settings.seen_number, *TIMEOUT], self.env)
        self.assertEqual(seen.returncode, 0, seen.stderr)
        self.assertRegex(seen.stdout, rf"^\{self.settings.seen_number}  SEEN  \d+ times?, score \d+ \(asked privately, by hash prefix\)\n$")
        unseen = tollwatch(["--json", "lookup", "--private", "+441632960001", *TIMEOUT], self.env)
        self.assertEqual((unseen.returncode, json.loads(unseen.stdout)), (1, {"key": "+441632960001", "found": False}))

    def test_control_characters_from_the_server_are_escaped(self) -> None:
        # An address of its own, so that a run against a server kept from an earlier one counts 1.
        address = f"2001:db8::{random.randint(0x1000, 0xFFFF):x}:{random.randint(0x1000, 0xFFFF):x}"
        with Tollwatch(self.settings.url, self.settings.client_id, self.settings.client_secret) as client:
            client.submit_event(event(source_ip=address, sip_user_agent="evil\x1b[2Jscanner\u202e"))
        run = tollwatch(["ip", address, *TIMEOUT], self.env)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("user agents       evil\\x1b[2Jscanner\\u202e 1", run.stdout)
        self.assertNotIn("\x1b", run.stdout)
        as_json = tollwatch(["--json", "ip", address, *TIMEOUT], self.env)
        self.assertNotIn("\x1b", as_json.stdout)
        self.assertEqual(json.loads(as_json.stdout)["user_agents"], [{"user_agent": "evil\x1b[2Jscanner\u202e", "count": 1}])

    def test_refused_credentials_exit_2_with_one_line_on_stderr_and_nothing_on_stdout(self) -> None:
        run = tollwatch(["lookup", self.settings.seen_number, *TIMEOUT], {**self.env, "TOLLWATCH_CLIENT_SECRET": "wrong"})
        self.assertEqual((run.returncode, run.stdout), (2, ""))
        self.assertRegex(run.stderr, r"^tollwatch: the server refused the credentials \(invalid_client: .*\): check TOLLWATCH_CLIENT_ID and TOLLWATCH_CLIENT_SECRET\n$")

    def test_other_errors_exit_2_too(self) -> None:
        cases: list[tuple[list[str], dict[str, Any], str]] = [
            (["lookup", "not a number!", *TIMEOUT], self.env, r"^tollwatch: .*\(invalid_phone_number\)\n$"),
            (
                ["lookup", self.settings.seen_number, *TIMEOUT],
                {"TOLLWATCH_URL": self.settings.url, "TOLLWATCH_CLIENT_ID": self.settings.limited_client_id, "TOLLWATCH_CLIENT_SECRET": self.settings.limited_client_secret},
                r"^tollwatch: .*\(insufficient_scope\)\n$",
            ),
            (["lookup", "+1"], {}, r"^tollwatch: set TOLLWATCH_URL, TOLLWATCH_CLIENT_ID, TOLLWATCH_CLIENT_SECRET \(the server's address and your API client's credentials\)\n$"),
            (["ip", "192.0.2.1", *TIMEOUT], {**self.env, "TOLLWATCH_URL": "not a url"}, r"^tollwatch: TOLLWATCH_URL is not a URL"),
            (["lookup", "-", *TIMEOUT], self.env, r"^tollwatch: no values given"),
            (["lookup", "--timeout", "0", "+1"], self.env, r"must be a positive number of seconds"),
            (["frobnicate"], self.env, r"invalid choice"),
        ]
        for args, env, stderr in cases:
            with self.subTest(args=args):
                run = tollwatch(args, env)
                self.assertEqual((run.returncode, run.stdout), (2, ""), run.stderr)
                self.assertRegex(run.stderr, stderr)
                self.assertNotIn("Traceback", run.stderr)

    def test_an_unreachable_server_exits_2_saying_so(self) -> None:
        closed = closed_port_url()
        run = tollwatch(["ip", "192.0.2.1", "--timeout", "5"], {**self.env, "TOLLWATCH_URL": closed})
        self.assertEqual((run.returncode, run.stdout), (2, ""))
        self.assertEqual(run.stderr, f"tollwatch: cannot reach {closed}: Connection refused\n")

    def test_a_server_that_never_answers_exits_2_at_the_timeout(self) -> None:
        silent = SocketServer()
        self.addCleanup(silent.stop)
        run = tollwatch(["lookup", "+46812118532", "--timeout", "0.3"], {**self.env, "TOLLWATCH_URL": silent.url})
        self.assertEqual((run.returncode, run.stdout), (2, ""))
        self.assertEqual(run.stderr, f"tollwatch: no answer from {silent.url} within 0.3 s (--timeout)\n")


if __name__ == "__main__":
    unittest.main()
