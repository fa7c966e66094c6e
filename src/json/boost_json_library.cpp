// Boost.JSON's implementation, compiled into the library (its header-only form, src.hpp included
// once per program): programs of this build load no libboost_json.so, whose symbol lookups every
// start of `codeact` paid in the dynamic loader, and a consumer of the installed library links no
// Boost library.
#include <boost/json/src.hpp>
