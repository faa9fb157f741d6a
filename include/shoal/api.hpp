// SHOAL_API marks what libshoal.so exports. The library is built with hidden symbol visibility, so
// everything in include/shoal that a program calls or catches carries it, and nothing else is exported.
#pragma once

#define SHOAL_API __attribute__((visibility("default")))
