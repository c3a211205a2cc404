# attack: confused deputy: let unittest's loader (a trusted stdlib frame) import a module outside the allowlist by name
# expect: denied
# layer: audit|import
import unittest

mod = unittest.TestLoader().loadTestsFromName("zipfile")
import sys  # noqa: E402

if "zipfile" in sys.modules:
    print("ESCAPED: unittest imported zipfile for the snippet")
