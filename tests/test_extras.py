"""Which extra provides a missing module, read from the installed package's metadata."""

from mintgym.extras import install_hint, missing_extra, missing_module


def test_a_missing_module_of_an_extra_names_the_extra_and_its_install():
    error = "ModuleNotFoundError: No module named 'Xlib.display'"
    assert missing_module(error) == "Xlib"
    assert missing_extra(error) == "desktop"
    assert install_hint(error) == "needs 'Xlib', from the desktop extra: pip install 'mintgym[desktop]'"


def test_an_import_name_unlike_its_distribution_is_mapped():
    assert missing_extra("No module named 'docx'") == "desktop"  # python-docx


def test_other_errors_have_no_hint():
    assert install_hint("No module named 'no_such_module_anywhere'") is None
    assert install_hint("ValueError: bad value") is None
