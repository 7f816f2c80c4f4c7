// SQLite's page-cache setting (SQLITE_CONFIG_PAGECACHE), which Swift cannot make through the
// variadic sqlite3_config: the faresync executable has each connection take its cached pages in a
// block of its own (Sources/faresync/ProcessMemory.swift).
#ifndef FARESYNC_CSQLITEPAGECACHE_SHIM_H
#define FARESYNC_CSQLITEPAGECACHE_SHIM_H
#include <sqlite3.h>

// Has each connection take its first `pages` cached pages in one block (SQLITE_CONFIG_PAGECACHE
// without a buffer); SQLITE_OK, or SQLITE_MISUSE once SQLite is initialized.
static inline int faresync_sqlite_page_blocks(int pages) {
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, pages);
}
#endif
