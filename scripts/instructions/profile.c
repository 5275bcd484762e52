/* A QEMU TCG plugin (plugin API version 1, QEMU 7.2+) that counts, per translated block, how many times
 * the process ran it, all its threads together, and at exit writes the process's memory map and one line
 * per block that ran: "<start address> <instructions in the block> <times run>" (docs/performance.md,
 * "Where the instructions go"). profile.py turns that into instructions per function, per module and per
 * library. The plugin's argument `out=PATH` names the file. As counter.c, it declares the few API
 * functions it uses, so no QEMU headers are needed. */
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t plugin_id;
struct qemu_plugin_tb;
enum cb_flags { CB_NO_REGS };

extern void qemu_plugin_register_vcpu_tb_trans_cb(plugin_id, void (*)(plugin_id, struct qemu_plugin_tb *));
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
extern uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);
extern void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, void (*)(unsigned int, void *), enum cb_flags, void *);
extern void qemu_plugin_register_atexit_cb(plugin_id, void (*)(plugin_id, void *), void *);
extern void qemu_plugin_outs(const char *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

struct block {
    uint64_t address;
    uint64_t instructions;
    uint64_t runs;
    struct block *next;
};

static struct block *blocks;
static char out_path[4096] = "qemu-profile.txt";

static void on_block(unsigned int cpu, void *data) {
    (void)cpu;
    __atomic_add_fetch(&((struct block *)data)->runs, 1, __ATOMIC_RELAXED);
}

static void on_translate(plugin_id id, struct qemu_plugin_tb *tb) {
    (void)id;
    struct block *block = calloc(1, sizeof *block);
    if (!block) return;
    block->address = qemu_plugin_tb_vaddr(tb);
    block->instructions = qemu_plugin_tb_n_insns(tb);
    /* A block translated again (after a flush) gets a second record; profile.py adds them up. */
    struct block *head = __atomic_load_n(&blocks, __ATOMIC_ACQUIRE);
    do { block->next = head; } while (!__atomic_compare_exchange_n(&blocks, &head, block, 1, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, CB_NO_REGS, block);
}

static void on_exit_(plugin_id id, void *unused) {
    (void)id; (void)unused;
    FILE *out = fopen(out_path, "w");
    if (!out) { qemu_plugin_outs("profile: cannot write the output file\n"); return; }
    fputs("maps\n", out);
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[8192];
    while (maps && fgets(line, sizeof line, maps)) fputs(line, out);
    if (maps) fclose(maps);
    fputs("blocks\n", out);
    for (struct block *block = __atomic_load_n(&blocks, __ATOMIC_ACQUIRE); block; block = block->next) {
        uint64_t runs = __atomic_load_n(&block->runs, __ATOMIC_RELAXED);
        if (runs) fprintf(out, "%llx %llu %llu\n", (unsigned long long)block->address, (unsigned long long)block->instructions,
                          (unsigned long long)runs);
    }
    fclose(out);
}

__attribute__((visibility("default"))) int qemu_plugin_install(plugin_id id, const void *info, int argc, char **argv) {
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) snprintf(out_path, sizeof out_path, "%s", argv[i] + 4);
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_exit_, NULL);
    return 0;
}
