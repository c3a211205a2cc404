"""stdlib-allow/*.txt: every name is a real stdlib module of the linked interpreter, and every
module of the default list imports AND works under the default policy (all layers on), so the
audit hook and the kernel layers never break an allowed module."""
import glob
import os
import subprocess

import pytest

from conftest import ROOT, run_exec

ALLOW_DIR = os.path.join(ROOT, "stdlib-allow")
PYTHON311 = "/usr/bin/python3.11"


def read_list(name):
    names = []
    with open(os.path.join(ALLOW_DIR, name)) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


LISTS = sorted(f for f in os.listdir(ALLOW_DIR) if f.endswith(".txt"))


def stdlib_names():
    out = subprocess.run([PYTHON311, "-I", "-S", "-c",
                          "import sys; print('\\n'.join(sys.stdlib_module_names))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_lists_exist():
    assert {"default.txt", "strict.txt", "notebook.txt"} <= set(LISTS)


@pytest.mark.parametrize("listname", LISTS)
def test_names_are_stdlib_modules(listname):
    known = stdlib_names()
    names = read_list(listname)
    assert names, listname + " is empty"
    bad = [n for n in names if n.split(".")[0] not in known]
    assert not bad, "%s: not in sys.stdlib_module_names: %s" % (listname, bad)
    dups = sorted({n for n in names if names.count(n) > 1})
    assert not dups, "%s: listed twice: %s" % (listname, dups)


def test_strict_is_within_default():
    assert set(read_list("strict.txt")) <= set(read_list("default.txt"))


# One expression or statement block per module: it must really use the module, and the last
# line prints something checked below ("OK" unless the snippet says otherwise).
EXERCISE = {
    "_strptime": "import datetime; d = datetime.datetime.strptime('2024-02-03', '%Y-%m-%d'); "
                 "assert d.day == 3",
    "abc": "import abc\nclass A(abc.ABC):\n @abc.abstractmethod\n def f(self): ...\n"
           "try:\n A()\nexcept TypeError: pass\nelse: raise AssertionError",
    "argparse": "import argparse; p = argparse.ArgumentParser(); p.add_argument('--n', type=int); "
                "assert p.parse_args(['--n', '3']).n == 3",
    "array": "import array; a = array.array('i', [1, 2, 3]); assert a.tobytes()[:4] == "
             "(1).to_bytes(4, 'little')",
    "ast": "import ast; assert isinstance(ast.parse('x = 1').body[0], ast.Assign)",
    "base64": "import base64; assert base64.b64decode(base64.b64encode(b'hi')) == b'hi'",
    "binascii": "import binascii; assert binascii.hexlify(b'\\x01') == b'01'",
    "bisect": "import bisect; assert bisect.bisect_left([1, 3, 5], 4) == 2",
    "builtins": "import builtins; assert builtins.len('ab') == 2",
    "bz2": "import bz2; assert bz2.decompress(bz2.compress(b'x' * 100)) == b'x' * 100",
    "calendar": "import calendar; assert calendar.isleap(2024) and 'March' in calendar.month(2024, 3)",
    "cmath": "import cmath; assert abs(cmath.exp(1j * cmath.pi) + 1) < 1e-12",
    "codecs": "import codecs; assert codecs.encode('abc', 'rot13') == 'nop'; "
              "assert codecs.decode(b'\\xe9', 'latin-1') == '\\xe9'",
    "collections": "import collections; c = collections.Counter('abca'); assert c['a'] == 2; "
                   "P = collections.namedtuple('P', 'x y'); assert P(1, 2).y == 2; "
                   "d = collections.deque([1]); d.appendleft(0); assert list(d) == [0, 1]",
    "contextlib": "import contextlib\nwith contextlib.suppress(KeyError): {}['x']",
    "contextvars": "import contextvars; v = contextvars.ContextVar('v', default=1); "
                   "assert contextvars.copy_context().run(v.get) == 1",
    "copy": "import copy; a = [[1]]; b = copy.deepcopy(a); b[0].append(2); assert a == [[1]]",
    "copyreg": "import copyreg, pickle\nclass C: pass\n"
               "copyreg.pickle(C, lambda c: (C, ()))\nassert type(pickle.loads(pickle.dumps(C()))) is C",
    "csv": "import csv, io; assert list(csv.reader(io.StringIO('a,b\\n1,2\\n')))[1] == ['1', '2']; "
           "f = open('t.csv', 'w', newline=''); csv.writer(f).writerow([1, 'x']); f.close(); "
           "assert open('t.csv', newline='').read() == '1,x\\r\\n'",
    "dataclasses": "import dataclasses\n@dataclasses.dataclass(order=True)\nclass P:\n x: int\n y: int = 0\n"
                   "assert P(1) < P(2) and dataclasses.asdict(P(1, 2)) == {'x': 1, 'y': 2}",
    "datetime": "import datetime; d = datetime.date(2024, 1, 31) + datetime.timedelta(days=1); "
                "assert d.isoformat() == '2024-02-01'; datetime.datetime.now(); "
                "assert datetime.datetime.fromisoformat('2024-01-02T03:04').hour == 3",
    "decimal": "import decimal; assert str(decimal.Decimal('0.1') + decimal.Decimal('0.2')) == '0.3'; "
               "decimal.getcontext().prec = 5; assert str(decimal.Decimal(1) / 3) == '0.33333'",
    "difflib": "import difflib; assert difflib.SequenceMatcher(None, 'abc', 'abd').ratio() > 0.6; "
               "assert list(difflib.unified_diff(['a'], ['b']))",
    "dis": "import dis, io; s = io.StringIO(); dis.dis('x + 1', file=s); assert 'LOAD_NAME' in s.getvalue()",
    "doctest": "import doctest\ndef f():\n    '''\n    >>> 1 + 1\n    2\n    '''\n"
               "r = doctest.run_docstring_examples(f, {'f': f})",
    "enum": "import enum\nclass C(enum.Enum):\n R = 1\n G = 2\nassert C(2) is C.G and C['R'].value == 1\n"
            "class F(enum.IntFlag):\n A = 1\n B = 2\nassert (F.A | F.B) == 3",
    "errno": "import errno; assert errno.ENOENT == 2 and errno.errorcode[2] == 'ENOENT'",
    "fnmatch": "import fnmatch; assert fnmatch.fnmatch('a.py', '*.py') and fnmatch.filter(['a', 'b.c'], '*.c') == ['b.c']",
    "fractions": "import fractions; assert fractions.Fraction(1, 3) + fractions.Fraction(1, 6) == fractions.Fraction(1, 2)",
    "functools": "import functools\n@functools.lru_cache(None)\ndef fib(n): return n if n < 2 else fib(n-1) + fib(n-2)\n"
                 "assert fib(80) == 23416728348467685 and functools.reduce(int.__add__, [1, 2, 3]) == 6",
    "getopt": "import getopt; assert getopt.getopt(['-a', 'x'], 'a:')[0] == [('-a', 'x')]",
    "graphlib": "import graphlib; assert list(graphlib.TopologicalSorter({'b': {'a'}}).static_order()) == ['a', 'b']",
    "gzip": "import gzip; assert gzip.decompress(gzip.compress(b'abc')) == b'abc'; "
            "f = gzip.open('t.gz', 'wt'); f.write('hi'); f.close(); assert gzip.open('t.gz', 'rt').read() == 'hi'",
    "hashlib": "import hashlib; assert hashlib.sha256(b'').hexdigest().startswith('e3b0c442'); "
               "assert hashlib.md5(b'a').hexdigest() == '0cc175b9c0f1b6a831c399e269772661'; "
               "hashlib.blake2b(b'x'); hashlib.sha3_256(b'x')",
    "heapq": "import heapq; h = [5, 1, 3]; heapq.heapify(h); assert heapq.heappop(h) == 1 and heapq.nlargest(1, h) == [5]",
    "hmac": "import hmac, hashlib; assert hmac.compare_digest(hmac.new(b'k', b'm', hashlib.sha256).digest(), "
            "hmac.new(b'k', b'm', 'sha256').digest())",
    "html": "import html, html.parser; assert html.escape('<a>') == '&lt;a&gt;' and html.unescape('&amp;') == '&'\n"
            "class P(html.parser.HTMLParser):\n tags = []\n def handle_starttag(self, t, a): self.tags.append(t)\n"
            "p = P(); p.feed('<b>x</b>'); assert p.tags == ['b']",
    "inspect": "import inspect\ndef f(a, b=2): pass\nassert list(inspect.signature(f).parameters) == ['a', 'b']; "
               "assert inspect.isfunction(f)",
    "io": "import io; s = io.StringIO(); s.write('x'); assert s.getvalue() == 'x'; "
          "assert io.BytesIO(b'ab').read(1) == b'a'; f = io.open('t.txt', 'w'); f.write('y'); f.close(); "
          "assert io.open('t.txt').read() == 'y'",
    "ipaddress": "import ipaddress; assert ipaddress.ip_address('10.0.0.1') in ipaddress.ip_network('10.0.0.0/8')",
    "itertools": "import itertools; assert list(itertools.permutations('ab')) == [('a', 'b'), ('b', 'a')]; "
                 "assert list(itertools.accumulate([1, 2, 3])) == [1, 3, 6]",
    "json": "import json; assert json.loads(json.dumps({'a': [1, 2.5, None]})) == {'a': [1, 2.5, None]}",
    "linecache": "import linecache; assert linecache.getline(linecache.__file__, 1) != ''",
    "keyword": "import keyword; assert keyword.iskeyword('for') and not keyword.iskeyword('x')",
    "lzma": "import lzma; assert lzma.decompress(lzma.compress(b'abc')) == b'abc'",
    "math": "import math; assert math.isclose(math.sqrt(2) ** 2, 2) and math.comb(5, 2) == 10 and math.gcd(12, 18) == 6",
    "numbers": "import numbers, fractions; assert isinstance(fractions.Fraction(1), numbers.Rational)",
    "operator": "import operator; assert operator.itemgetter(1)([1, 2]) == 2 and operator.add(1, 2) == 3",
    "os": "import os; os.mkdir('d'); open(os.path.join('d', 'f'), 'w').close(); assert os.listdir('d') == ['f']; "
          "os.rename('d/f', 'd/g'); os.remove('d/g'); os.rmdir('d'); assert os.getcwd() and os.getpid() > 0; "
          "assert os.path.join('a', 'b') == 'a/b' and os.environ is not None",
    "pathlib": "import pathlib; p = pathlib.Path('x.txt'); p.write_text('hi'); assert p.read_text() == 'hi'; "
               "assert [q.name for q in pathlib.Path('.').iterdir()] == ['x.txt']; p.unlink()",
    "pickle": "import pickle; assert pickle.loads(pickle.dumps({'a': (1, 2)})) == {'a': (1, 2)}\n"
              "class K:\n def __init__(self): self.v = 3\nassert pickle.loads(pickle.dumps(K())).v == 3",
    "pprint": "import pprint; assert pprint.pformat({'b': 1, 'a': 2}) == \"{'a': 2, 'b': 1}\"",
    "queue": "import queue; q = queue.PriorityQueue(); q.put(2); q.put(1); assert q.get() == 1",
    "random": "import random; random.seed(1); a = random.random(); random.seed(1); assert a == random.random(); "
              "assert random.randint(1, 6) in range(1, 7); random.shuffle([1, 2, 3]); random.SystemRandom().random()",
    "re": "import re; assert re.findall(r'\\d+', 'a1b22') == ['1', '22'] and re.sub('a', 'b', 'aa') == 'bb'",
    "reprlib": "import reprlib; assert len(reprlib.repr(list(range(100)))) < 50",
    "secrets": "import secrets; assert len(secrets.token_hex(8)) == 16 and secrets.randbelow(10) < 10",
    "shlex": "import shlex; assert shlex.split('a \"b c\"') == ['a', 'b c'] and shlex.quote('a b') == \"'a b'\"",
    "statistics": "import statistics; assert statistics.mean([1, 2, 3]) == 2 and statistics.median([3, 1, 2]) == 2; "
                  "statistics.stdev([1, 2, 3, 4]); statistics.NormalDist(0, 1).cdf(0)",
    "string": "import string; assert string.Template('$x!').substitute(x='hi') == 'hi!' and 'a' in string.ascii_letters",
    "stringprep": "import stringprep; assert stringprep.in_table_b1('\\u00ad')",
    "struct": "import struct; assert struct.unpack('<I', struct.pack('<I', 258)) == (258,)",
    "sys": "import sys; assert sys.version_info[:2] == (3, 11); sys.stdout.write('x\\n'); sys.getrecursionlimit(); "
           "sys.setrecursionlimit(5000)",
    "tempfile": "import tempfile, os\nwith tempfile.TemporaryDirectory() as d:\n open(os.path.join(d, 'f'), 'w').write('x')\n"
                "with tempfile.NamedTemporaryFile('w+') as f:\n f.write('y'); f.seek(0); assert f.read() == 'y'\n"
                "with tempfile.TemporaryFile() as f: f.write(b'z')",
    "textwrap": "import textwrap; assert textwrap.wrap('aa bb cc', 5) == ['aa bb', 'cc'] and textwrap.dedent('  x') == 'x'",
    "time": "import time; t = time.time(); time.sleep(0.001); assert time.time() >= t; time.perf_counter(); "
            "time.localtime(); time.strftime('%Y'); time.monotonic(); time.process_time()",
    "timeit": "import timeit; assert timeit.timeit('1 + 1', number=100) >= 0",
    "token": "import token; assert token.tok_name[token.NAME] == 'NAME'",
    "tokenize": "import tokenize, io; toks = list(tokenize.generate_tokens(io.StringIO('x = 1\\n').readline)); "
                "assert toks[0].string == 'x'",
    "tomllib": "import tomllib; assert tomllib.loads('a = 1\\n[b]\\nc = \"d\"')['b']['c'] == 'd'",
    "traceback": "import traceback\ntry:\n 1 / 0\nexcept ZeroDivisionError:\n s = traceback.format_exc()\n"
                 "assert 'ZeroDivisionError' in s; traceback.print_exc()",
    "types": "import types; assert types.SimpleNamespace(a=1).a == 1 and isinstance(len, types.BuiltinFunctionType)",
    "typing": "import typing\nT = typing.TypeVar('T')\nclass Box(typing.Generic[T]): pass\n"
              "def f(x: typing.List[int]) -> typing.Optional[str]: pass\n"
              "assert typing.get_type_hints(f)['x'] == typing.List[int]\n"
              "class P(typing.NamedTuple):\n x: int\nassert P(1).x == 1\n"
              "class TD(typing.TypedDict):\n a: int",
    "unicodedata": "import unicodedata; assert unicodedata.name('a') == 'LATIN SMALL LETTER A' and "
                   "unicodedata.normalize('NFC', 'e\\u0301') == '\\xe9'",
    "unittest": "import unittest\nclass T(unittest.TestCase):\n def test_a(self): self.assertEqual(1, 1)\n"
                "r = unittest.TextTestRunner(verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(T))\n"
                "assert r.wasSuccessful()",
    "urllib": "import urllib.parse as p; assert p.urlparse('http://a/b?c=1').query == 'c=1' and p.quote('a b') == 'a%20b'",
    "uuid": "import uuid; assert uuid.uuid4().version == 4 and uuid.UUID(int=0).hex == '0' * 32; "
            "uuid.uuid5(uuid.NAMESPACE_DNS, 'x')",
    "warnings": "import warnings\nwith warnings.catch_warnings(record=True) as w:\n warnings.simplefilter('always')\n"
                " warnings.warn('x')\nassert len(w) == 1\nwarnings.warn('shown on stderr')",
    "weakref": "import weakref\nclass C: pass\nc = C(); r = weakref.ref(c); assert r() is c\n"
               "d = weakref.WeakValueDictionary(); d['k'] = c; del c; assert r() is None",
    "zlib": "import zlib; assert zlib.decompress(zlib.compress(b'abc' * 10)) == b'abc' * 10 and zlib.crc32(b'a') == 3904355907",
}


def test_every_default_module_has_an_exercise():
    missing = [m for m in read_list("default.txt") if m not in EXERCISE]
    assert not missing, "add an EXERCISE entry for: %s" % missing


@pytest.mark.parametrize("module", read_list("default.txt"))
def test_default_module_works(module):
    code = EXERCISE[module] + "\nprint('OK')\n"
    v, rc, err = run_exec(code)
    assert rc == 0, err
    assert v["status"] == "ok", (module, v["exception"], v["denials"], v["stderr"][-2000:])
    assert v["denials"] == []
    assert v["stdout"].endswith("OK\n"), v["stdout"]


# --- the import closure (pyshim/closure.py) ----------------------------------------------
# The audit hook decides by the module being imported, not by who imports it: an allowed
# module's own imports are allowed because they are in its closure, computed here once per
# top-level stdlib module by importing it (and its submodules) in a fresh interpreter and
# recording what sys.modules gained. Regenerate with: /usr/bin/python3 tests/e2e/test_stdlib_allow.py

CLOSURE_FILE = os.path.join(ROOT, "pyshim", "closure.py")
SKIP = {"antigravity", "this", "idlelib", "turtledemo", "test", "tkinter", "turtle", "ensurepip",
        "venv", "__hello__", "__phello__", "lib2to3", "pydoc_data", "msilib", "winreg",
        "winsound", "_winapi", "msvcrt", "nt", "_msi", "_overlapped", "__main__"}

PROBE = r'''
import sys
top, denied = sys.argv[1], set(sys.argv[2:])
class Block:
    @staticmethod
    def find_spec(name, path=None, target=None):
        parts = name.split(".")
        if parts[-1] in denied or any(".".join(parts[:i + 1]) in denied for i in range(len(parts))):
            raise ModuleNotFoundError("blocked", name=name)
sys.meta_path.insert(0, Block)
base = set(sys.modules)
def load(name):
    try:
        __import__(name)
    except BaseException:
        return None
    return sys.modules.get(name)
def walk(name, mod):
    for d in list(getattr(mod, "__path__", None) or []):
        try:
            entries = sorted(__import__("posix").listdir(d))
        except OSError:
            continue
        for e in entries:
            sub = e[:-3] if e.endswith(".py") else e.split(".")[0] if e.endswith(".so") else e
            if sub in ("__init__", "__main__", "__pycache__", "tests", "test") or not sub.isidentifier():
                continue
            if e.endswith((".py", ".so")) or "." not in e:
                m = load(name + "." + sub)
                if m is not None:
                    walk(name + "." + sub, m)
if top not in denied:
    walk(top, load(top))
print(" ".join(sorted(set(sys.modules) - base - {top})))
'''


def denied_modules():
    """The Python layer's denylist (denied_modules[] in host/python/): the probe must not
    follow imports the sandbox refuses."""
    src = ""
    for name in sorted(glob.glob(os.path.join(ROOT, "host", "python", "*.c"))):
        with open(name) as f:
            src += f.read()
    block = src.split("denied_modules[] = {", 1)[1].split("};", 1)[0]
    return sorted(s.strip().strip('"') for s in block.replace("\n", " ").split(",") if s.strip())


def probe_closure(top, denied):
    out = subprocess.run([PYTHON311, "-I", "-S", "-c", PROBE, top] + denied, capture_output=True,
                         text=True, timeout=120, stdin=subprocess.DEVNULL, cwd="/").stdout
    return " ".join(n for n in out.split() if not n.startswith(top + "."))


def generate_closure():
    import concurrent.futures
    denied = denied_modules()
    names = sorted(n for n in stdlib_names() if n not in SKIP and n not in denied)
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        closures = dict(zip(names, ex.map(lambda n: probe_closure(n, denied), names)))
    with open(CLOSURE_FILE, "w") as f:
        f.write('"""Generated by tests/e2e/test_stdlib_allow.py: for each top-level stdlib module, the\n'
                'modules that importing it and its submodules loads. Do not edit."""\n\n_CLOSURE = {\n')
        for n in names:
            f.write("    %r: %r,\n" % (n, closures[n]))
        f.write("}\n")


def committed_closure():
    ns = {}
    with open(CLOSURE_FILE) as f:
        exec(f.read(), ns)
    return ns["_CLOSURE"]


@pytest.mark.parametrize("module", sorted({m.split(".")[0] for m in read_list("default.txt")}))
def test_closure_is_current(module):
    """pyshim/closure.py matches what this interpreter really imports (else: regenerate)."""
    assert committed_closure().get(module) == probe_closure(module, denied_modules())


if __name__ == "__main__":
    generate_closure()
