"""py-lmdb (the `lmdb` package) used unchanged: the README's Python example,
then DUPSORT, cursors, deletes, `replace`, `pop`, `copy`, named databases
listed in the main database. It prints what it sees; run.sh runs it on
py-lmdb built against Sarsen's liblmdb.so and on py-lmdb with its own LMDB,
in fresh directories, and the two transcripts must be equal."""
import os

import lmdb

# The README's example.
env = lmdb.open("pydb", max_dbs=4)
with env.begin(write=True) as txn:
    txn.put(b"hello", b"world")
with env.begin() as txn:
    assert txn.get(b"hello") == b"world"

# More of the API.
with env.begin(write=True) as txn:
    for i in range(1000):
        txn.put(b"k%05d" % i, b"v" * (i % 50))
tags = env.open_db(b"tags", dupsort=True)
with env.begin(write=True, db=tags) as txn:
    for k, v in [(b"rust", b"fast"), (b"rust", b"safe"), (b"c", b"fast")]:
        print("put", k, v, txn.put(k, v))
    print("put dup again", txn.put(b"rust", b"fast", dupdata=False))
with env.begin() as txn:
    print("get hello", txn.get(b"hello"))
    print("main keys", sum(1 for _ in txn.cursor()))
    print("main first", txn.cursor().first(), "last", txn.cursor().last())
    print("tags in main", txn.get(b"tags") is not None)
    c = txn.cursor(db=tags)
    print("set_key rust", c.set_key(b"rust"), "count", c.count())
    print("dups", list(c.iternext_dup()))
    print("all tags", list(txn.cursor(db=tags)))
with env.begin(write=True) as txn:
    c = txn.cursor()
    print("set_range k00500", c.set_range(b"k00500"), c.key())
    for _ in range(10):
        c.delete()
    print("after deletes", c.key())
    print("replace", txn.replace(b"hello", b"there"))
    print("pop", txn.pop(b"hello"), txn.pop(b"hello"))
    print("put no overwrite", txn.put(b"k00001", b"x", overwrite=False))
with env.begin() as txn:
    print("get k00509", txn.get(b"k00509"), "k00510", txn.get(b"k00510"))
    # The last key is the named database's: LMDB's record of it holds page
    # numbers, so only its size is compared.
    k, v = next(iter(txn.cursor().iterprev()))
    print("reverse first", k, len(v))
print("entries", env.stat()["entries"])
print("tags entries", env.begin().stat(tags)["entries"])
os.mkdir("pycopy")  # LMDB copies into an existing directory
env.copy("pycopy")
env.close()
copy = lmdb.open("pycopy", max_dbs=4, readonly=True)
with copy.begin() as txn:
    print("copy keys", sum(1 for _ in txn.cursor()))
copy.close()
print("py-lmdb example: OK")
