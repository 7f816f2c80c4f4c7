// SQLite's page-cache buffer (SQLITE_CONFIG_PAGECACHE), which Swift cannot set through the variadic
// sqlite3_config: the faresync executable gives SQLite's page caches a buffer of their own
// (Sources/faresync/ProcessMemory.swift).
#ifndef FARESYNC_CSQLITEPAGECACHE_SHIM_H
#define FARESYNC_CSQLITEPAGECACHE_SHIM_H
#include <sqlite3.h>

// The bytes a slot holds beside its page (SQLITE_CONFIG_PCACHE_HDRSZ), or -1.
static inline int faresync_sqlite_page_header_size(void) {
    int size = 0;
    return sqlite3_config(SQLITE_CONFIG_PCACHE_HDRSZ, &size) == SQLITE_OK ? size : -1;
}

// Gives SQLite `slots` slots of `slotSize` bytes at `buffer` for its cached pages; SQLITE_OK, or
// SQLITE_MISUSE once SQLite is initialized.
static inline int faresync_sqlite_page_cache(void *buffer, int slotSize, int slots) {
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, buffer, slotSize, slots);
}
#endif
