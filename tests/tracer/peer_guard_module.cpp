// peer_guard_module.cpp - a C++ module with a function-local static, loaded by the C program
// peer_guards_c with RTLD_LOCAL (as Python loads extension modules): its C++ runtime is then
// not in the global scope, where the tracer's guard functions are. module_recursive's
// initialiser reaches its own static again.
#include <string>

static std::string make_name(int n)
{
    return "module " + std::to_string(n);
}

extern "C" const char *module_name(void)
{
    static const std::string name = make_name(7);
    return name.c_str();
}

extern "C" int module_recursive(void);

static int reach_again(void)
{
    return module_recursive() + 1;
}

extern "C" int module_recursive(void)
{
    static const int value = reach_again();
    return value;
}
