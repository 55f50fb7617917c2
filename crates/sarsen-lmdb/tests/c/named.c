/* Named databases seen through the main database: cursor walks both ways,
 * mdb_get of a name, SET/SET_RANGE, entry counts, writes of a name's key
 * through the main database, opening a plain key as a database, databases
 * created in a nested transaction, dropped, and in an aborted transaction.
 * It prints every outcome (a record's size, not its bytes: page numbers
 * differ); tests/c_programs.rs builds it against real LMDB and against
 * Sarsen's liblmdb.so and compares the two outputs. Run in a directory
 * holding an empty ./testdb. */
#include <stdio.h>
#include <string.h>
#include "lmdb.h"

#define CHECK(expr)                                                          \
	do {                                                                     \
		int rc_ = (expr);                                                    \
		if (rc_) {                                                           \
			fprintf(stderr, "%s: %s\n", #expr, mdb_strerror(rc_));          \
			return 1;                                                        \
		}                                                                    \
	} while (0)

static MDB_val val(const char *s)
{
	MDB_val v;
	v.mv_size = strlen(s);
	v.mv_data = (void *)s;
	return v;
}

static void show(const char *what, int rc, MDB_val *k, MDB_val *v)
{
	printf("%s rc=%d", what, rc);
	if (rc == 0 && k)
		printf(" k=%.*s", (int)k->mv_size, (char *)k->mv_data);
	if (rc == 0 && v)
		printf(" vsize=%zu", v->mv_size);
	printf("\n");
}

/* Every key of the main database, forward and backward, and its count. */
static void walk(MDB_txn *txn, MDB_dbi main, const char *what)
{
	MDB_cursor *c;
	MDB_val k, v;
	MDB_stat st;
	int rc;
	if (mdb_cursor_open(txn, main, &c)) {
		printf("%s: no cursor\n", what);
		return;
	}
	printf("%s fwd:", what);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
		printf(" %.*s/%zu", (int)k.mv_size, (char *)k.mv_data, v.mv_size);
	printf(" (%d)\n%s bwd:", rc, what);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_LAST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_PREV))
		printf(" %.*s", (int)k.mv_size, (char *)k.mv_data);
	printf(" (%d)\n", rc);
	k = val("c");
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	show("  set_range c", rc, &k, &v);
	rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	show("  next", rc, &k, &v);
	rc = mdb_cursor_get(c, &k, &v, MDB_PREV);
	show("  prev", rc, &k, &v);
	rc = mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT);
	show("  current", rc, &k, &v);
	k = val("n");
	rc = mdb_cursor_get(c, &k, &v, MDB_SET);
	show("  set n", rc, NULL, &v);
	k = val("nope");
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY);
	show("  set_key nope", rc, &k, &v);
	k = val("zz");
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	show("  set_range zz", rc, &k, &v);
	rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	show("  next", rc, &k, &v);
	mdb_cursor_close(c);
	rc = mdb_stat(txn, main, &st);
	printf("  stat rc=%d entries=%zu\n", rc, rc ? 0 : st.ms_entries);
}

int main(void)
{
	MDB_env *env;
	MDB_txn *txn, *child;
	MDB_dbi main, b, n, zz, c2, x;
	MDB_val k, v;
	MDB_stat st;
	const char *plain[] = {"a", "m", "z", "zzz"};
	int i, rc;

	CHECK(mdb_env_create(&env));
	CHECK(mdb_env_set_maxdbs(env, 8));
	CHECK(mdb_env_open(env, "./testdb", MDB_NOSYNC, 0644));

	CHECK(mdb_txn_begin(env, NULL, 0, &txn));
	CHECK(mdb_dbi_open(txn, NULL, 0, &main));
	walk(txn, main, "empty");
	for (i = 0; i < 4; i++) {
		k = val(plain[i]);
		v = val("1");
		CHECK(mdb_put(txn, main, &k, &v, 0));
	}
	walk(txn, main, "plain only");
	CHECK(mdb_dbi_open(txn, "b", MDB_CREATE, &b));
	CHECK(mdb_dbi_open(txn, "n", MDB_CREATE | MDB_DUPSORT, &n));
	CHECK(mdb_dbi_open(txn, "zz", MDB_CREATE, &zz));
	k = val("x");
	v = val("y");
	CHECK(mdb_put(txn, b, &k, &v, 0));
	CHECK(mdb_put(txn, n, &k, &v, 0));
	walk(txn, main, "created");
	CHECK(mdb_txn_commit(txn));

	/* Writes of a name's key, a plain key opened as a database. */
	CHECK(mdb_txn_begin(env, NULL, 0, &txn));
	k = val("b");
	rc = mdb_get(txn, main, &k, &v);
	show("get b", rc, NULL, &v);
	v = val("data");
	rc = mdb_put(txn, main, &k, &v, 0);
	show("put b", rc, NULL, NULL);
	rc = mdb_put(txn, main, &k, &v, MDB_NOOVERWRITE);
	show("put b nooverwrite", rc, NULL, NULL);
	k = val("n");
	rc = mdb_del(txn, main, &k, NULL);
	show("del n", rc, NULL, NULL);
	rc = mdb_dbi_open(txn, "a", 0, &x);
	show("open a", rc, NULL, NULL);
	rc = mdb_dbi_open(txn, "m", MDB_CREATE, &x);
	show("create m", rc, NULL, NULL);
	rc = mdb_txn_commit(txn);
	show("commit", rc, NULL, NULL);

	CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	walk(txn, main, "committed");
	k = val("zz");
	rc = mdb_get(txn, main, &k, &v);
	show("get zz", rc, NULL, &v);
	rc = mdb_dbi_open(txn, "a", 0, &x);
	show("read open a", rc, NULL, NULL);
	mdb_txn_abort(txn);
	rc = mdb_env_stat(env, &st);
	printf("env_stat rc=%d entries=%zu\n", rc, rc ? 0 : st.ms_entries);

	/* A child creates a database; the parent sees it after the commit. */
	CHECK(mdb_txn_begin(env, NULL, 0, &txn));
	CHECK(mdb_txn_begin(env, txn, 0, &child));
	CHECK(mdb_dbi_open(child, "c2", MDB_CREATE, &c2));
	walk(child, main, "child");
	CHECK(mdb_txn_commit(child));
	walk(txn, main, "parent");
	/* Deleting the plain key "m" through a cursor, dropping "zz". */
	CHECK(mdb_drop(txn, zz, 1));
	walk(txn, main, "dropped zz");
	{
		MDB_cursor *cur;
		CHECK(mdb_cursor_open(txn, main, &cur));
		k = val("m");
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
		show("cursor set m", rc, &k, &v);
		rc = mdb_cursor_del(cur, 0);
		show("cursor del m", rc, NULL, NULL);
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		show("next after del", rc, &k, &v);
		rc = mdb_cursor_del(cur, 0);
		show("cursor del (a name)", rc, NULL, NULL);
		k = val("n");
		v = val("1");
		rc = mdb_cursor_put(cur, &k, &v, 0);
		show("cursor put n", rc, NULL, NULL);
		mdb_cursor_close(cur);
	}
	walk(txn, main, "before abort");
	mdb_txn_abort(txn);

	CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	walk(txn, main, "after abort");
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return 0;
}
