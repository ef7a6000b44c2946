// Linked with one engine library taken whole (every object file) and nothing but the dependencies
// that library declares: a missing dependency in src/CMakeLists.txt is an undefined symbol here.
int main() { return 0; }
