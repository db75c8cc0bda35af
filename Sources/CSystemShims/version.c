#include <stddef.h>
#include "CSystemShims.h"

// The repository's VERSION file, embedded at compile time (C23 #embed): the compiler's
// dependency file names it, so a new version rebuilds this file and nothing else.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc23-extensions"
static const char version_file[] = {
#embed "../../VERSION" suffix(, )
    0,
};
#pragma clang diagnostic pop

// Defined only by the object scripts/build-release.sh links in; a weak reference is null
// when no object defines it (a plain `swift build`).
extern const char tp_build_commit[] __attribute__((weak));

const char *tp_version_file(void) { return version_file; }

const char *tp_recorded_build_commit(void) { return tp_build_commit; }
