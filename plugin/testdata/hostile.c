/* Test-only plugins that attack posenc the way a hostile kernel author would, one per HOSTILE_*
 * definition. Each wraps the correct sinusoidal kernel of examples/rope_kernels.c (so whatever
 * fails is the attack, not the mathematics) and, on every call, first does its one thing:
 *   PROC_MEM     rewrite posenc's memory through /proc/<posenc>/mem (its canary)
 *   KILL_PARENT  kill(posenc, SIGKILL)          STOP_PARENT  kill(posenc, SIGSTOP)
 *   DAEMON       double-fork and setsid: a process left running, named posenc_daemon
 *   BIG_MEMORY   map 30 GiB and touch TOUCH_MIB of it
 *   SPRAY_FDS    write 64 random bytes to every file descriptor
 *   FORGED_REPLY a forged short reply on the channel, on calls with an odd number of rows
 *   CLOSE_FDS    close every descriptor
 *   SLOW         sleep 2 s (correct, only slow)
 *   WRONG_1_IN_64  a wrong first element on every 64th call */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define posenc_plugin_kernels example_plugin_kernels
#include "../../examples/rope_kernels.c"
#undef posenc_plugin_kernels

#ifndef TOUCH_MIB
#define TOUCH_MIB 8192
#endif

/* The posenc process validating this library: found as an attacker would, in /proc (in a PID
 * namespace, getppid() says nothing). Its children have the same command line and later pids:
 * the first one is posenc itself. */
static pid_t validator(void) {
  DIR* proc = opendir("/proc");
  struct dirent* e;
  pid_t found = getppid();
  if (!proc) return found;
  while ((e = readdir(proc)) != NULL) {
    char path[64], cmdline[4096];
    ssize_t n;
    int fd;
    const pid_t pid = (pid_t)atoi(e->d_name);
    if (pid <= 0) continue;
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    n = read(fd, cmdline, sizeof cmdline - 1);
    close(fd);
    if (n <= 0) continue;
    cmdline[n] = '\0';
    /* argv[0] ends in "posenc", argv[1] is "validate" */
    if (strlen(cmdline) >= 6 && strcmp(cmdline + strlen(cmdline) - 6, "posenc") == 0 &&
        (size_t)n > strlen(cmdline) + 1 && strcmp(cmdline + strlen(cmdline) + 1, "validate") == 0 &&
        (found == getppid() || pid < found))
      found = pid;
  }
  closedir(proc);
  return found;
}

static int refuse(posenc_error* e, const char* what, pid_t pid) {
  snprintf(e->message, sizeof e->message, "%s %d: %s", what, (int)pid, strerror(errno));
  return POSENC_FAILED;
}

/* Overwrites every copy of posenc's canary in its writable memory. */
static int attack(posenc_error* e) {
#if defined(HOSTILE_PROC_MEM)
  static const char canary[] = "posenc validate canary: untouched";
  char path[64], line[512];
  const pid_t pid = validator();
  FILE* maps;
  int mem;
  snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
  mem = open(path, O_RDWR);
  if (mem < 0) return refuse(e, "cannot open /proc/<posenc>/mem of pid", pid);
  snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
  maps = fopen(path, "r");
  if (!maps) return refuse(e, "cannot read the maps of pid", pid);
  while (fgets(line, sizeof line, maps)) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[1] != 'w') continue;
    if (hi - lo > (64ul << 20)) continue;
    {
      char* bytes = malloc(hi - lo);
      unsigned long at;
      if (bytes && pread(mem, bytes, hi - lo, (off_t)lo) == (ssize_t)(hi - lo))
        for (at = 0; at + sizeof canary <= hi - lo; ++at)
          if (memcmp(bytes + at, canary, sizeof canary - 1) == 0)
            (void)!pwrite(mem, "INJECTED", 8, (off_t)(lo + at));
      free(bytes);
    }
  }
  fclose(maps);
  close(mem);
#elif defined(HOSTILE_KILL_PARENT)
  const pid_t pid = validator();
  if (kill(pid, SIGKILL) != 0) return refuse(e, "cannot kill pid", pid);
#elif defined(HOSTILE_STOP_PARENT)
  const pid_t pid = validator();
  if (kill(pid, SIGSTOP) != 0) return refuse(e, "cannot stop pid", pid);
#elif defined(HOSTILE_DAEMON)
  if (fork() == 0) {
    if (fork() == 0) {
      setsid();
      prctl(PR_SET_NAME, "posenc_daemon");
      sleep(3600);
    }
    _exit(0);
  }
#elif defined(HOSTILE_BIG_MEMORY)
  const size_t size = (size_t)30 << 30;
  size_t at;
  char* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return refuse(e, "cannot map 30 GiB in pid", getpid());
  for (at = 0; at < ((size_t)TOUCH_MIB << 20); at += 4096) p[at] = 1;
  munmap(p, size);
#elif defined(HOSTILE_SPRAY_FDS)
  int fd, i;
  char noise[64];
  srand((unsigned)time(NULL));
  for (fd = 0; fd < 1024; ++fd) {
    for (i = 0; i < 64; ++i) noise[i] = (char)rand();
    (void)!write(fd, noise, sizeof noise);
  }
#elif defined(HOSTILE_CLOSE_FDS)
  int fd;
  for (fd = 0; fd < 1024; ++fd) close(fd);
#elif defined(HOSTILE_SLOW)
  sleep(2);
#endif
  (void)e;
  (void)refuse;
  (void)validator;
  return POSENC_OK;
}

static posenc_kernel kHostile[1];
static int (*correct)(const posenc_sinusoidal_args*, posenc_error*);

static int hostile(const posenc_sinusoidal_args* a, posenc_error* e) {
  int code = attack(e);
#if defined(HOSTILE_FORGED_REPLY)
  if (a->out->shape[0] % 2 == 1) (void)!write(3, "R\0\1\0\0", 5); /* a header cut short */
#endif
  if (code != POSENC_OK) return code;
  code = correct(a, e);
#if defined(HOSTILE_WRONG_1_IN_64)
  {
    static unsigned calls;
    if (code == POSENC_OK && ++calls % 64 == 0) f32_ptr(a->out)[0] += 1.0f;
  }
#endif
  return code;
}

static const posenc_plugin kPluginTable = {POSENC_PLUGIN_ABI_VERSION, 1, kHostile};

POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void) {
  const posenc_plugin* example = example_plugin_kernels();
  uint32_t i;
  for (i = 0; i < example->count; ++i)
    if (example->kernels[i].family == POSENC_FAMILY_SINUSOIDAL) kHostile[0] = example->kernels[i];
  kHostile[0].name = "hostile";
  correct = kHostile[0].run.sinusoidal;
  kHostile[0].run.sinusoidal = hostile;
  return &kPluginTable;
}
