// glibc's allocator controls (<malloc.h>), which Swift's Glibc module leaves out: the process tunes
// and trims its heap and reports it (Sources/faresync/ProcessMemory.swift).
#ifndef FARESYNC_CMALLOC_SHIM_H
#define FARESYNC_CMALLOC_SHIM_H
#if defined(__linux__) && __has_include(<malloc.h>)
#include <malloc.h>
#endif
#endif
