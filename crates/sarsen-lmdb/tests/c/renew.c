/* Read transactions reset and renewed, and cursors renewed on them: the
 * return codes and what they see (mdb_txn_id, mdb_get, cursor moves) while
 * live, while reset, after renewals with commits in between, and the calls
 * LMDB refuses (a renewal of a live or a write transaction, a cursor
 * renewed on a reset one or a write one, reads of a reset one). It prints
 * every outcome; tests/c_programs.rs builds it against real LMDB and
 * against Sarsen's liblmdb.so and compares the two outputs. Run in a
 * directory holding an empty ./testdb. */
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
		printf(" v=%.*s", (int)v->mv_size, (char *)v->mv_data);
	printf("\n");
}

/* Commits key `k` with value `v`. */
static int put(MDB_env *env, MDB_dbi dbi, const char *k, const char *v)
{
	MDB_txn *w;
	MDB_val kv = val(k), vv = val(v);
	CHECK(mdb_txn_begin(env, NULL, 0, &w));
	CHECK(mdb_put(w, dbi, &kv, &vv, 0));
	CHECK(mdb_txn_commit(w));
	return 0;
}

int main(void)
{
	MDB_env *env;
	MDB_txn *r, *w;
	MDB_dbi dbi;
	MDB_cursor *c, *wc;
	MDB_val k, v;
	char kb[16], vb[16];
	int i, rc;

	CHECK(mdb_env_create(&env));
	CHECK(mdb_env_open(env, "./testdb", 0, 0644));
	CHECK(mdb_txn_begin(env, NULL, 0, &w));
	CHECK(mdb_dbi_open(w, NULL, 0, &dbi));
	CHECK(mdb_txn_commit(w));
	if (put(env, dbi, "a", "1") || put(env, dbi, "b", "1"))
		return 1;

	CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	printf("live: id=%zu\n", (size_t)mdb_txn_id(r));
	show("renew live", mdb_txn_renew(r), NULL, NULL);
	CHECK(mdb_cursor_open(r, dbi, &c));
	show("first", mdb_cursor_get(c, &k, &v, MDB_FIRST), &k, &v);

	mdb_txn_reset(r);
	printf("reset: id=%zu\n", (size_t)mdb_txn_id(r));
	mdb_txn_reset(r);
	k = val("a");
	show("get reset", mdb_get(r, dbi, &k, &v), NULL, &v);
	show("cursor next reset", mdb_cursor_get(c, &k, &v, MDB_NEXT), &k, &v);
	show("cursor renew reset", mdb_cursor_renew(r, c), NULL, NULL);
	show("cursor open reset", mdb_cursor_open(r, dbi, &wc), NULL, NULL);

	for (i = 0; i < 5; i++) {
		snprintf(kb, sizeof kb, "k%d", i);
		snprintf(vb, sizeof vb, "v%d", i);
		if (put(env, dbi, kb, vb))
			return 1;
		show("renew", mdb_txn_renew(r), NULL, NULL);
		printf("renewed: id=%zu\n", (size_t)mdb_txn_id(r));
		k = val(kb);
		show("get new", mdb_get(r, dbi, &k, &v), NULL, &v);
		show("cursor renew", mdb_cursor_renew(r, c), NULL, NULL);
		show("cursor last", mdb_cursor_get(c, &k, &v, MDB_LAST), &k, &v);
		show("cursor prev", mdb_cursor_get(c, &k, &v, MDB_PREV), &k, &v);
		k = val("b");
		show("cursor set", mdb_cursor_get(c, &k, &v, MDB_SET_KEY), &k, &v);
		/* A commit after the renewal is not seen. */
		if (put(env, dbi, "late", "x"))
			return 1;
		k = val("late");
		show("get late", mdb_get(r, dbi, &k, &v), NULL, &v);
		show("cursor next", mdb_cursor_get(c, &k, &v, MDB_NEXT), &k, &v);
		mdb_txn_reset(r);
	}
	show("renew", mdb_txn_renew(r), NULL, NULL);
	k = val("late");
	show("get late", mdb_get(r, dbi, &k, &v), NULL, &v);

	/* A write transaction: reset does nothing, renew and a cursor renewed
	 * on it are refused. */
	CHECK(mdb_txn_begin(env, NULL, 0, &w));
	mdb_txn_reset(w);
	show("renew write", mdb_txn_renew(w), NULL, NULL);
	show("cursor renew write", mdb_cursor_renew(w, c), NULL, NULL);
	k = val("a");
	show("get write", mdb_get(w, dbi, &k, &v), NULL, &v);
	mdb_txn_abort(w);

	/* The read transaction's cursor still works; ended, it is renewed on a
	 * new transaction. */
	show("cursor first", mdb_cursor_get(c, &k, &v, MDB_FIRST), &k, &v);
	mdb_txn_abort(r);
	CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	show("cursor renew new", mdb_cursor_renew(r, c), NULL, NULL);
	show("cursor last", mdb_cursor_get(c, &k, &v, MDB_LAST), &k, &v);
	mdb_cursor_close(c);
	mdb_txn_abort(r);
	rc = 0;
	mdb_env_close(env);
	return rc;
}
