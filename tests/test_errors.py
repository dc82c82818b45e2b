"""The one-line form of an error that every report uses (``first_line``, ``error_line``)."""

from mintgym.errors import error_line, first_line


def test_the_first_line_of_a_message_stripped():
    assert first_line(ValueError("  bad value\n  traceback follows\n")) == "bad value"
    assert first_line("\n\nserver said no\nmore") == "server said no"


def test_an_empty_message_gives_the_default_or_the_type_never_an_index_error():
    """``str(err).splitlines()[0]`` raised IndexError on these (mintgym eval, the viewer's run index)."""
    assert first_line(KeyError()) == "KeyError"
    assert first_line(ValueError("   \n ")) == "ValueError"
    assert first_line(ValueError(""), "(no message)") == "(no message)"
    assert first_line("") == ""


def test_error_line_names_the_type():
    assert error_line(OSError("disk full\nat /x")) == "OSError: disk full"
    assert error_line(RuntimeError()) == "RuntimeError"
