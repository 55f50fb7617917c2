"""py-lmdb (the `lmdb` package, built with LMDB_FORCE_SYSTEM=1 against
Sarsen's liblmdb.so) used unchanged: the README's Python example plus a
few checks. Run by run.sh in a fresh directory."""
import os

import lmdb

env = lmdb.open("pydb", max_dbs=4)
with env.begin(write=True) as txn:
    txn.put(b"hello", b"world")
    for i in range(1000):
        txn.put(b"k%05d" % i, b"v" * (i % 50))
tags = env.open_db(b"tags", dupsort=True)
with env.begin(write=True, db=tags) as txn:
    for k, v in [(b"rust", b"fast"), (b"rust", b"safe"), (b"c", b"fast")]:
        txn.put(k, v)
with env.begin() as txn:
    assert txn.get(b"hello") == b"world"
    assert sum(1 for _ in txn.cursor()) == 1001
    c = txn.cursor(db=tags)
    assert c.set_key(b"rust")
    assert list(c.iternext_dup()) == [b"fast", b"safe"]
with env.begin(write=True) as txn:
    c = txn.cursor()
    assert c.set_range(b"k00500")
    for _ in range(10):
        c.delete()
    assert txn.replace(b"hello", b"there") == b"world"
    assert txn.pop(b"hello") == b"there"
with env.begin() as txn:
    assert txn.get(b"k00509") is None and txn.get(b"k00510") is not None
assert env.stat()["entries"] == 990
env.copy("pycopy")
env.close()
assert os.path.exists("pydb/data.sdb")
print("py-lmdb example: OK")
