/* The README's C example (keep the two identical). */
#include <stdio.h>
#include "lmdb.h"

int main(void) {
    MDB_env *env; MDB_txn *txn; MDB_dbi dbi;
    MDB_val k = {5, "hello"}, v = {5, "world"}, out;
    mdb_env_create(&env);
    mdb_env_open(env, "./testdb", 0, 0644);      /* the directory must exist */
    mdb_txn_begin(env, NULL, 0, &txn);
    mdb_dbi_open(txn, NULL, 0, &dbi);
    mdb_put(txn, dbi, &k, &v, 0);
    mdb_txn_commit(txn);
    mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (mdb_get(txn, dbi, &k, &out) == 0)
        printf("%.*s\n", (int)out.mv_size, (char *)out.mv_data);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return 0;
}
