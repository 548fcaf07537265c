// The built-in methods. Adding a method: write its file, declare its factory here, and
// add one line to the list. tests/test_registry.cpp fails if a method disappears.
#include "bench/method.h"

namespace flashio {

std::unique_ptr<Method> make_reference();
std::unique_ptr<Method> make_standard();
std::unique_ptr<Method> make_standard_fused();
std::unique_ptr<Method> make_flash1();
std::unique_ptr<Method> make_flash2();
std::unique_ptr<Method> make_blocksparse_flash();
std::unique_ptr<Method> make_blocksparse_standard();

const Registry& builtin_registry() {
  static const Registry registry = [] {
    Registry r;
    r.add(make_reference());
    r.add(make_standard());
    r.add(make_standard_fused());
    r.add(make_flash1());
    r.add(make_flash2());
    r.add(make_blocksparse_flash());
    r.add(make_blocksparse_standard());
    return r;
  }();
  return registry;
}

}  // namespace flashio
