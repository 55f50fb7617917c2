/* Passes NULL pointers, closed handles, foreign dbis and oversize keys to
 * the library: every call must return an error code (or, for the void
 * functions, return), never crash. Exits 0 when all checks pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include "lmdb.h"

static int failures = 0;

#define EXPECT_ERR(expr)                                                    \
	do {                                                                    \
		int rc_ = (expr);                                                   \
		if (rc_ == 0) {                                                     \
			fprintf(stderr, "%s:%d: %s succeeded\n", __FILE__, __LINE__, #expr); \
			failures++;                                                     \
		}                                                                   \
	} while (0)

#define EXPECT_OK(expr)                                                     \
	do {                                                                    \
		int rc_ = (expr);                                                   \
		if (rc_ != 0) {                                                     \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,   \
				mdb_strerror(rc_));                                         \
			failures++;                                                     \
		}                                                                   \
	} while (0)

int main(void)
{
	MDB_env *env = NULL, *env2 = NULL, *closed = NULL;
	MDB_txn *txn = NULL, *dead = NULL;
	MDB_cursor *cur = NULL;
	MDB_dbi dbi = 0, dbi2 = 0;
	MDB_val k, v;
	MDB_stat st;
	char big[70000];
	char bogus[256];
	size_t n;

	memset(bogus, 0x5a, sizeof(bogus));
	memset(big, 'k', sizeof(big));

	/* NULL everywhere. */
	EXPECT_ERR(mdb_env_create(NULL));
	EXPECT_ERR(mdb_env_open(NULL, "x", 0, 0644));
	EXPECT_ERR(mdb_env_stat(NULL, &st));
	EXPECT_ERR(mdb_env_sync(NULL, 1));
	EXPECT_ERR(mdb_env_set_mapsize(NULL, 1 << 20));
	EXPECT_ERR(mdb_txn_begin(NULL, NULL, 0, &txn));
	EXPECT_ERR(mdb_txn_commit(NULL));
	mdb_txn_abort(NULL);
	mdb_txn_reset(NULL);
	mdb_env_close(NULL);
	mdb_cursor_close(NULL);
	EXPECT_ERR(mdb_dbi_open(NULL, NULL, 0, &dbi));
	EXPECT_ERR(mdb_get(NULL, 1, &k, &v));
	EXPECT_ERR(mdb_put(NULL, 1, &k, &v, 0));
	EXPECT_ERR(mdb_del(NULL, 1, &k, NULL));
	EXPECT_ERR(mdb_cursor_open(NULL, 1, &cur));
	EXPECT_ERR(mdb_cursor_get(NULL, &k, &v, MDB_FIRST));
	EXPECT_ERR(mdb_cursor_put(NULL, &k, &v, 0));
	EXPECT_ERR(mdb_cursor_del(NULL, 0));
	EXPECT_ERR(mdb_cursor_count(NULL, &n));
	EXPECT_ERR(mdb_reader_check(NULL, NULL));
	if (mdb_txn_env(NULL) != NULL || mdb_cursor_txn(NULL) != NULL) {
		fprintf(stderr, "non-NULL from a NULL handle\n");
		failures++;
	}
	if (mdb_strerror(MDB_NOTFOUND) == NULL || mdb_strerror(12345) == NULL ||
		mdb_strerror(-1) == NULL) {
		fprintf(stderr, "mdb_strerror returned NULL\n");
		failures++;
	}

	/* Pointers that are not handles. */
	EXPECT_ERR(mdb_env_stat((MDB_env *)bogus, &st));
	EXPECT_ERR(mdb_txn_commit((MDB_txn *)bogus));
	EXPECT_ERR(mdb_cursor_get((MDB_cursor *)bogus, &k, &v, MDB_FIRST));
	mdb_env_close((MDB_env *)bogus);
	mdb_txn_abort((MDB_txn *)bogus);

	/* A real environment. */
	EXPECT_OK(mdb_env_create(&env));
	EXPECT_ERR(mdb_txn_begin(env, NULL, 0, &txn)); /* not open yet */
	EXPECT_OK(mdb_env_set_maxdbs(env, 4));
	EXPECT_OK(mdb_env_open(env, "./testdb", 0, 0664));
	EXPECT_ERR(mdb_env_open(env, "./testdb", 0, 0664)); /* twice */
	EXPECT_OK(mdb_txn_begin(env, NULL, 0, &txn));
	EXPECT_ERR(mdb_dbi_open(txn, NULL, 0, NULL));
	EXPECT_OK(mdb_dbi_open(txn, NULL, 0, &dbi));
	EXPECT_ERR(mdb_get(txn, dbi, NULL, &v));
	EXPECT_ERR(mdb_put(txn, dbi, &k, NULL, 0));
	EXPECT_ERR(mdb_get(txn, 9999, &k, &v)); /* never-opened dbi */
	EXPECT_ERR(mdb_cursor_open(txn, 9999, &cur));

	/* Oversize keys and an empty key. */
	k.mv_size = sizeof(big);
	k.mv_data = big;
	v.mv_size = 1;
	v.mv_data = "v";
	EXPECT_ERR(mdb_put(txn, dbi, &k, &v, 0));
	k.mv_size = (size_t)mdb_env_get_maxkeysize(env) + 1000;
	EXPECT_ERR(mdb_put(txn, dbi, &k, &v, 0));
	EXPECT_ERR(mdb_get(txn, dbi, &k, &v));
	k.mv_size = 1;
	k.mv_data = "k";
	EXPECT_OK(mdb_put(txn, dbi, &k, &v, 0));

	/* A cursor used wrongly. */
	EXPECT_OK(mdb_cursor_open(txn, dbi, &cur));
	EXPECT_ERR(mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT)); /* unpositioned */
	EXPECT_ERR(mdb_cursor_get(cur, &k, &v, (MDB_cursor_op)999));
	EXPECT_ERR(mdb_cursor_get(cur, NULL, &v, MDB_SET));
	EXPECT_ERR(mdb_cursor_del(cur, 0)); /* unpositioned */
	EXPECT_ERR(mdb_cursor_count(cur, NULL));
	EXPECT_OK(mdb_txn_commit(txn));
	/* The write txn's cursor was freed with it: a second close is a no-op. */
	mdb_cursor_close(cur);
	EXPECT_ERR(mdb_cursor_get(cur, &k, &v, MDB_FIRST));

	/* A huge MDB_RESERVE, a cursor renewed into a write txn, a parent
	 * from another environment. */
	EXPECT_OK(mdb_txn_begin(env, NULL, 0, &txn));
	k.mv_size = 1;
	k.mv_data = "r";
	v.mv_size = (size_t)1 << 40;
	v.mv_data = NULL;
	EXPECT_ERR(mdb_put(txn, dbi, &k, &v, MDB_RESERVE));
	EXPECT_OK(mdb_cursor_open(txn, dbi, &cur));
	EXPECT_ERR(mdb_cursor_renew(txn, cur));
	EXPECT_ERR(mdb_cursor_put(cur, &k, NULL, 0));
	EXPECT_ERR(mdb_cursor_put(cur, &k, &v, MDB_CURRENT)); /* unpositioned */
	mdb_txn_abort(txn);
	EXPECT_ERR(mdb_cursor_get(cur, &k, &v, MDB_FIRST)); /* freed with its txn */

	/* A committed transaction is a dead handle. */
	dead = txn;
	EXPECT_ERR(mdb_txn_commit(dead));
	EXPECT_ERR(mdb_get(dead, dbi, &k, &v));
	mdb_txn_abort(dead);

	/* A read transaction may not write. */
	EXPECT_OK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	EXPECT_ERR(mdb_put(txn, dbi, &k, &v, 0));
	EXPECT_ERR(mdb_del(txn, dbi, &k, NULL));
	/* Renewed while live, reset twice, read while reset, its cursor
	 * renewed on it while reset, renewed after its end. */
	EXPECT_ERR(mdb_txn_renew(txn));
	EXPECT_OK(mdb_cursor_open(txn, dbi, &cur));
	EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_FIRST));
	mdb_txn_reset(txn);
	mdb_txn_reset(txn);
	EXPECT_ERR(mdb_get(txn, dbi, &k, &v));
	EXPECT_ERR(mdb_cursor_get(cur, &k, &v, MDB_NEXT));
	EXPECT_ERR(mdb_cursor_renew(txn, cur));
	EXPECT_OK(mdb_txn_renew(txn));
	EXPECT_ERR(mdb_txn_renew(txn));
	EXPECT_OK(mdb_cursor_renew(txn, cur));
	EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_FIRST));
	dead = txn;
	mdb_txn_abort(txn);
	EXPECT_ERR(mdb_txn_renew(dead));
	EXPECT_ERR(mdb_cursor_renew(dead, cur));
	mdb_txn_reset(dead);
	mdb_cursor_close(cur);
	/* A write transaction is not renewed. */
	EXPECT_OK(mdb_txn_begin(env, NULL, 0, &txn));
	mdb_txn_reset(txn);
	EXPECT_ERR(mdb_txn_renew(txn));
	EXPECT_OK(mdb_get(txn, dbi, &k, &v));
	mdb_txn_abort(txn);

	/* Descriptors: none through a dead handle or NULL; a copy to a bad
	 * descriptor or with unknown flags fails. */
	{
		int fd = 0;
		EXPECT_ERR(mdb_env_get_fd(NULL, &fd));
		EXPECT_ERR(mdb_env_get_fd((MDB_env *)bogus, &fd));
		EXPECT_ERR(mdb_env_get_fd(env, NULL));
		EXPECT_ERR(mdb_env_copyfd(NULL, 1));
		EXPECT_ERR(mdb_env_copyfd(env, -1));
		EXPECT_ERR(mdb_env_copyfd(env, 999999));
		EXPECT_ERR(mdb_env_copyfd2(env, 1, 0x100));
		EXPECT_ERR(mdb_env_copy2(env, NULL, 0));
	}

	/* A dbi of another environment. */
	EXPECT_OK(mdb_env_create(&env2));
	EXPECT_OK(mdb_env_set_maxdbs(env2, 4));
	EXPECT_OK(mdb_env_open(env2, "./testdb2", 0, 0664));
	EXPECT_OK(mdb_txn_begin(env2, NULL, 0, &txn));
	EXPECT_OK(mdb_dbi_open(txn, "other", MDB_CREATE, &dbi2));
	EXPECT_OK(mdb_txn_commit(txn));
	EXPECT_OK(mdb_txn_begin(env, NULL, 0, &txn));
	EXPECT_ERR(mdb_get(txn, dbi2, &k, &v));
	EXPECT_ERR(mdb_put(txn, dbi2, &k, &v, 0));
	EXPECT_ERR(mdb_txn_begin(env2, txn, 0, &dead)); /* parent of another env */
	mdb_txn_abort(txn);

	/* A closed environment. */
	closed = env2;
	mdb_env_close(env2);
	EXPECT_ERR(mdb_txn_begin(closed, NULL, 0, &txn));
	EXPECT_ERR(mdb_env_stat(closed, &st));
	{
		int fd = 0;
		EXPECT_ERR(mdb_env_get_fd(closed, &fd));
		EXPECT_ERR(mdb_env_copyfd(closed, 1));
	}
	mdb_env_close(closed);

	mdb_env_close(env);
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("abuse: all calls returned errors as expected\n");
	return 0;
}
