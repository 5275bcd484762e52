/* A QEMU TCG plugin (plugin API version 1, QEMU 7.2+) that counts the guest instructions a process
 * executes, all its threads together, and prints "instructions: N" when it exits (docs/performance.md,
 * "Current figures"). Each translated block adds its length to one counter when it runs. The few API
 * declarations it needs are written here, so no QEMU headers are required. */
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

typedef uint64_t plugin_id;
struct qemu_plugin_tb;
enum cb_flags { CB_NO_REGS };

extern void qemu_plugin_register_vcpu_tb_trans_cb(plugin_id, void (*)(plugin_id, struct qemu_plugin_tb *));
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
extern void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, void (*)(unsigned int, void *), enum cb_flags, void *);
extern void qemu_plugin_register_atexit_cb(plugin_id, void (*)(plugin_id, void *), void *);
extern void qemu_plugin_outs(const char *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t executed;

static void on_block(unsigned int cpu, void *length) {
    (void)cpu;
    __atomic_add_fetch(&executed, (uint64_t)(uintptr_t)length, __ATOMIC_RELAXED);
}

static void on_translate(plugin_id id, struct qemu_plugin_tb *block) {
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_cb(block, on_block, CB_NO_REGS, (void *)(uintptr_t)qemu_plugin_tb_n_insns(block));
}

static void on_exit_(plugin_id id, void *unused) {
    (void)id; (void)unused;
    char line[48];
    snprintf(line, sizeof line, "instructions: %llu\n", (unsigned long long)__atomic_load_n(&executed, __ATOMIC_RELAXED));
    qemu_plugin_outs(line);
}

__attribute__((visibility("default"))) int qemu_plugin_install(plugin_id id, const void *info, int argc, char **argv) {
    (void)info; (void)argc; (void)argv;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_exit_, NULL);
    return 0;
}
