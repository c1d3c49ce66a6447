"""The command lines the phone's shell reads and the text `input text` types: read back with the test phone's
shell reader (the same rules as a POSIX shell's), every word arrives as it was meant."""

from __future__ import annotations

import pytest

from hangar.errors import InvalidArgs
from hangar.rigs.backends.mobile import words
from tests.peers.adb_device import split_command_line

HOSTILE = ["a b", "it's", '"q"', "$(id)", "`id`", "x;y", "a&&b", "|", "*", "~", "#c", "=", "-n", "", "\\", "%s", "é"]


def typed_back(text: str) -> str:
    """What the phone would type from ``typing_commands``: Android's `input text` reads %s as a space."""
    out = []
    for line in words.lines(words.typing_commands(text)):
        for argv in split_command_line(line):
            if argv[:2] == ["input", "text"]:
                out.append(argv[2].replace("%s", " "))
            else:
                out.append({"66": "\n", "61": "\t"}[argv[2]])
    return "".join(out)


def test_each_word_is_one_literal_word_for_the_device_shell() -> None:
    assert split_command_line(words.command_line(["echo", *HOSTILE])) == [["echo", *HOSTILE]]
    for word in HOSTILE:
        assert split_command_line(words.command_line([word])) == [[word]]
    assert words.command_line(["-x", "-y"]).startswith("'")  # never read by adb as its own option
    assert words.quote("com.example.app/.Main") == "com.example.app/.Main"  # plain words stay readable


@pytest.mark.parametrize(
    "text", ["plain", "two  spaces", "100%s", "%", "%%s", "% s", "%s%s", "a\nb\tc", "'\"$`\\;&|", " lead", "x" * 2000]
)
def test_typing_arrives_literally(text: str) -> None:
    assert typed_back(text) == text


def test_lines_stay_under_the_limit_and_keep_every_command() -> None:
    commands = words.typing_commands("it's a test " * 2000)
    lines = words.lines(commands)
    assert len(lines) > 1 and all(len(line) <= words.MAX_LINE for line in lines)
    assert [argv for line in lines for argv in split_command_line(line)] == commands


def test_untypable_text_is_refused_naming_the_field() -> None:
    for text in ("héllo", "bell\a", "\r"):
        with pytest.raises(InvalidArgs) as e:
            words.typing_commands(text)
        assert e.value.field == "action.text" and "printable ASCII" in e.value.message


def test_shell_line_limit_both_sides() -> None:
    at_limit = ["echo", "x" * (words.MAX_SHELL_LINE - len("echo "))]
    assert len(words.shell_line(at_limit)) == words.MAX_SHELL_LINE
    with pytest.raises(InvalidArgs) as e:
        words.shell_line(["echo", "x" * (words.MAX_SHELL_LINE - len("echo ") + 1)])
    assert e.value.field == "action.argv"
