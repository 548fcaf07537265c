// The built-in methods. Adding a method: write its file, declare its factory here, and
// add one line to the list. tests/test_registry.cpp fails if a method disappears.
#include "bench/method.h"

namespace flashio {

std::unique_ptr<Method> make_reference();
std::unique_ptr<Method> make_standard();
std::unique_ptr<Method> make_flash1();
std::unique_ptr<Method> make_flash2();

const Registry& builtin_registry() {
  static const Registry registry = [] {
    Registry r;
    r.add(make_reference());
    r.add(make_standard());
    r.add(make_flash1());
    r.add(make_flash2());
    return r;
  }();
  return registry;
}

}  // namespace flashio
