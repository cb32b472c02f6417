/*
 * A TEST DOUBLE of NIXL's C ABI (libnixl_capi.so), for mx-transport-nixl's tests only; it is not NIXL.
 *
 * It implements the subset of nixl_capi_* functions the Java binding calls, with the signatures, handle
 * ownership and status codes documented in shared/reference/nixl-capi.md, over memory of this process:
 * agents find each other through the metadata blob (a real serialized description: agent name, a unique id,
 * the process id and every registered region), a transfer reports IN_PROG before SUCCESS and moves its
 * bytes when it completes, a request must be released before it is destroyed (-3 otherwise), an agent whose
 * metadata was never loaded is NOT_FOUND (-6), and every other failure is ERROR_BACKEND (-2), as the wrapper
 * maps them. A transfer that reaches memory its owner has deregistered fails with -2 when it completes, as a
 * remote access error does on RDMA hardware; with the knob "serve_deregistered" it is served instead, as a
 * real NIXL over UCX's shared-memory, CMA and TCP transports does (the memory must still be mapped). An agent of another process is read (and written) with
 * process_vm_readv / process_vm_writev against the regions its blob described; a dead peer fails with -2.
 *
 * Test-only knobs (not in NIXL): nixl_double_inject (make a function return a status), nixl_double_set
 * (transfer timing), nixl_double_live (handles alive, for leak checks), nixl_double_last_agent_config and
 * nixl_double_last_backend (what the binding passed), nixl_double_last_registration and nixl_double_last_xfer
 * (the memory type and device id of the last register_mem and prep_xfer_dlist lists). Compiled with -DNIXL_DOUBLE_STUB it claims to be
 * NIXL's stub build.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

typedef int nixl_capi_status_t;
enum {
    ST_SUCCESS = 0,
    ST_IN_PROG = 1,
    ST_INVALID_PARAM = -1,
    ST_BACKEND = -2,
    ST_INVALID_STATE = -3,
    ST_NOT_FOUND = -6
};

/* The configuration struct, laid out as the reference documents (40 bytes). */
typedef struct {
    bool enable_prog_thread;
    bool enable_listen_thread;
    int listen_port;
    int thread_sync;
    unsigned num_workers;
    uint64_t pthr_delay_us;
    uint64_t lthr_delay_us;
    bool capture_telemetry;
} nixl_capi_agent_config_t;
_Static_assert(sizeof(nixl_capi_agent_config_t) == 40, "agent config is 40 bytes");

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------ knobs and accounting */

enum { K_AGENT, K_PARAMS, K_BACKEND, K_OPT_ARGS, K_STRING_LIST, K_REG_DLIST, K_XFER_DLIST, K_DLIST_HANDLE,
       K_XFER_REQ, K_NOTIF_MAP, K_MD_BUFFER, K_REGISTERED, K_MEM_LIST, K_KINDS };
static const char *KIND_NAMES[K_KINDS] = {"agent", "params", "backend", "opt_args", "string_list", "reg_dlist",
    "xfer_dlist", "dlist_handle", "xfer_req", "notif_map", "md_buffer", "registered", "mem_list"};
static long live[K_KINDS];
/* Regions still registered when their agent was destroyed (the binding should deregister first). */
static long registered_at_destroy;

#define MAX_INJECT 16
static struct { char fn[64]; int status; int times; } injected[MAX_INJECT];
static long in_prog_polls = 1; /* get_xfer_status calls that answer IN_PROG before a transfer completes */
static bool stuck;             /* every transfer stays IN_PROG */
static bool serve_deregistered; /* a peer's deregistered memory is still read, as a real NIXL over shm/CMA/TCP */
static char last_agent_config[256];
static char last_backend[1200];
static char last_registration[160]; /* "type=T dev=D addr=0x.. len=N" of the last register_mem */
static char prev_xfer[200];         /* "agent=NAME type=T dev=D count=N" of the prep_xfer_dlist before the last */
static char last_xfer[200];         /* ... and of the last one */

/* An injected status for this call of fn, or 0. Lock held. */
static int injected_status(const char *fn) {
    for (int i = 0; i < MAX_INJECT; i++) {
        if (injected[i].times > 0 && strcmp(injected[i].fn, fn) == 0) {
            injected[i].times--;
            return injected[i].status;
        }
    }
    return 0;
}

#define ENTER(fn)                                  \
    pthread_mutex_lock(&lock);                     \
    do {                                           \
        int inj_ = injected_status(fn);            \
        if (inj_ != 0) {                           \
            pthread_mutex_unlock(&lock);           \
            return inj_;                           \
        }                                          \
    } while (0)
#define RETURN(st)                                 \
    do {                                           \
        int st_ = (st);                            \
        pthread_mutex_unlock(&lock);               \
        return st_;                                \
    } while (0)

void nixl_double_inject(const char *fn, int status, int times) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_INJECT; i++) {
        if (injected[i].times <= 0) {
            snprintf(injected[i].fn, sizeof injected[i].fn, "%s", fn);
            injected[i].status = status;
            injected[i].times = times;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* Knobs: "in_prog_polls", "stuck", "serve_deregistered"; "reset" clears every knob and injection. */
void nixl_double_set(const char *knob, long value) {
    pthread_mutex_lock(&lock);
    if (strcmp(knob, "in_prog_polls") == 0) {
        in_prog_polls = value;
    } else if (strcmp(knob, "stuck") == 0) {
        stuck = value != 0;
    } else if (strcmp(knob, "serve_deregistered") == 0) {
        serve_deregistered = value != 0;
    } else if (strcmp(knob, "reset") == 0) {
        memset(injected, 0, sizeof injected);
        in_prog_polls = 1;
        stuck = false;
        serve_deregistered = false;
        registered_at_destroy = 0;
    }
    pthread_mutex_unlock(&lock);
}

/* Handles of a kind still alive (see KIND_NAMES), or "registered_at_destroy"; -1 for an unknown kind. */
long nixl_double_live(const char *kind) {
    pthread_mutex_lock(&lock);
    long v = -1;
    if (strcmp(kind, "registered_at_destroy") == 0) {
        v = registered_at_destroy;
    }
    for (int k = 0; k < K_KINDS; k++) {
        if (strcmp(kind, KIND_NAMES[k]) == 0) {
            v = live[k];
        }
    }
    pthread_mutex_unlock(&lock);
    return v;
}

void nixl_double_last_agent_config(char *buf, size_t cap) {
    pthread_mutex_lock(&lock);
    snprintf(buf, cap, "%s", last_agent_config);
    pthread_mutex_unlock(&lock);
}

void nixl_double_last_registration(char *buf, size_t cap) {
    pthread_mutex_lock(&lock);
    snprintf(buf, cap, "%s", last_registration);
    pthread_mutex_unlock(&lock);
}

void nixl_double_last_xfer(char *buf, size_t cap) {
    pthread_mutex_lock(&lock);
    snprintf(buf, cap, "%s; %s", prev_xfer, last_xfer);
    pthread_mutex_unlock(&lock);
}

void nixl_double_last_backend(char *buf, size_t cap) {
    pthread_mutex_lock(&lock);
    snprintf(buf, cap, "%s", last_backend);
    pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------ descriptor lists */

typedef struct {
    uint64_t addr, len, dev;
} desc_t;

typedef struct {
    int type;
    desc_t *d;
    size_t n, cap;
} dlist_t;

static int dl_add(dlist_t *l, uint64_t addr, uint64_t len, uint64_t dev) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        desc_t *d = realloc(l->d, cap * sizeof *d);
        if (!d) {
            return ST_BACKEND;
        }
        l->d = d;
        l->cap = cap;
    }
    l->d[l->n++] = (desc_t){addr, len, dev};
    return ST_SUCCESS;
}

static int dl_copy(dlist_t *to, const dlist_t *from) {
    to->type = from->type;
    to->n = to->cap = from->n;
    to->d = from->n ? malloc(from->n * sizeof(desc_t)) : NULL;
    if (from->n && !to->d) {
        return ST_BACKEND;
    }
    if (from->n) {
        memcpy(to->d, from->d, from->n * sizeof(desc_t));
    }
    return ST_SUCCESS;
}

static void dl_free(dlist_t *l) {
    free(l->d);
    l->d = NULL;
    l->n = l->cap = 0;
}

/* Whether some region of regs holds all of d. */
static bool covered(const dlist_t *regs, const desc_t *d) {
    for (size_t i = 0; i < regs->n; i++) {
        const desc_t *r = &regs->d[i];
        if (d->addr >= r->addr && d->addr + d->len >= d->addr && d->addr + d->len <= r->addr + r->len) {
            return true;
        }
    }
    return false;
}

static bool all_covered(const dlist_t *regs, const dlist_t *l) {
    for (size_t i = 0; i < l->n; i++) {
        if (!covered(regs, &l->d[i])) {
            return false;
        }
    }
    return true;
}

struct nixl_capi_reg_dlist_s { dlist_t l; };
struct nixl_capi_xfer_dlist_s { dlist_t l; };
typedef struct nixl_capi_reg_dlist_s *nixl_capi_reg_dlist_t;
typedef struct nixl_capi_xfer_dlist_s *nixl_capi_xfer_dlist_t;

/* ------------------------------------------------------------------ agents */

typedef struct remote_s {
    char *name;
    uint64_t uid;
    uint64_t pid;
    dlist_t regs; /* the regions the blob described, as of when it was taken */
    struct remote_s *next;
} remote_t;

struct nixl_capi_agent_s {
    char *name;
    uint64_t uid;
    int backends;
    dlist_t regs;
    remote_t *remotes;
    struct nixl_capi_agent_s *next;
};
typedef struct nixl_capi_agent_s *nixl_capi_agent_t;

static struct nixl_capi_agent_s *agents; /* live agents of this process */
static uint64_t next_uid = 1;

static remote_t *find_remote(nixl_capi_agent_t a, const char *name) {
    for (remote_t *r = a->remotes; r; r = r->next) {
        if (strcmp(r->name, name) == 0) {
            return r;
        }
    }
    return NULL;
}

static void free_remote(remote_t *r) {
    free(r->name);
    dl_free(&r->regs);
    free(r);
}

static nixl_capi_agent_t live_agent(uint64_t uid) {
    for (nixl_capi_agent_t a = agents; a; a = a->next) {
        if (a->uid == uid) {
            return a;
        }
    }
    return NULL;
}

bool nixl_capi_is_stub(void) {
#ifdef NIXL_DOUBLE_STUB
    return true;
#else
    return false;
#endif
}

nixl_capi_status_t nixl_capi_create_configured_agent(const char *name, const nixl_capi_agent_config_t *cfg,
                                                     nixl_capi_agent_t *agent) {
    ENTER("create_configured_agent");
    if (!name || !cfg || !agent) {
        RETURN(ST_INVALID_PARAM);
    }
    snprintf(last_agent_config, sizeof last_agent_config,
             "prog=%d listen=%d port=%d sync=%d workers=%u pdelay=%llu ldelay=%llu telemetry=%d",
             cfg->enable_prog_thread, cfg->enable_listen_thread, cfg->listen_port, cfg->thread_sync,
             cfg->num_workers, (unsigned long long)cfg->pthr_delay_us, (unsigned long long)cfg->lthr_delay_us,
             cfg->capture_telemetry);
    nixl_capi_agent_t a = calloc(1, sizeof *a);
    if (!a || !(a->name = strdup(name))) {
        free(a);
        RETURN(ST_BACKEND);
    }
    a->uid = ((uint64_t)getpid() << 32) | next_uid++;
    a->next = agents;
    agents = a;
    live[K_AGENT]++;
    *agent = a;
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_destroy_agent(nixl_capi_agent_t agent) {
    ENTER("destroy_agent");
    if (!agent) {
        RETURN(ST_INVALID_PARAM);
    }
    for (nixl_capi_agent_t *p = &agents; *p; p = &(*p)->next) {
        if (*p == agent) {
            *p = agent->next;
            break;
        }
    }
    registered_at_destroy += (long)agent->regs.n;
    live[K_REGISTERED] -= (long)agent->regs.n;
    while (agent->remotes) {
        remote_t *r = agent->remotes;
        agent->remotes = r->next;
        free_remote(r);
    }
    dl_free(&agent->regs);
    free(agent->name);
    free(agent);
    live[K_AGENT]--;
    RETURN(ST_SUCCESS);
}

/* ------------------------------------------------------------------ plugins, params, backends */

struct nixl_capi_string_list_s { size_t n; const char *s[4]; };
typedef struct nixl_capi_string_list_s *nixl_capi_string_list_t;

nixl_capi_status_t nixl_capi_get_available_plugins(nixl_capi_agent_t agent, nixl_capi_string_list_t *plugins) {
    ENTER("get_available_plugins");
    if (!agent || !plugins) {
        RETURN(ST_INVALID_PARAM);
    }
    nixl_capi_string_list_t l = calloc(1, sizeof *l);
    if (!l) {
        RETURN(ST_BACKEND);
    }
    l->n = 1;
    l->s[0] = "UCX";
    live[K_STRING_LIST]++;
    *plugins = l;
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_string_list_size(nixl_capi_string_list_t list, size_t *size) {
    ENTER("string_list_size");
    if (!list || !size) {
        RETURN(ST_INVALID_PARAM);
    }
    *size = list->n;
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_string_list_get(nixl_capi_string_list_t list, size_t index, const char **str) {
    ENTER("string_list_get");
    if (!list || !str || index >= list->n) {
        RETURN(ST_INVALID_PARAM);
    }
    *str = list->s[index];
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_destroy_string_list(nixl_capi_string_list_t list) {
    ENTER("destroy_string_list");
    if (!list) {
        RETURN(ST_INVALID_PARAM);
    }
    free(list);
    live[K_STRING_LIST]--;
    RETURN(ST_SUCCESS);
}

struct nixl_capi_params_s { char text[1024]; };
typedef struct nixl_capi_params_s *nixl_capi_params_t;

nixl_capi_status_t nixl_capi_create_params(nixl_capi_params_t *params) {
    ENTER("create_params");
    if (!params) {
        RETURN(ST_INVALID_PARAM);
    }
    nixl_capi_params_t p = calloc(1, sizeof *p);
    if (!p) {
        RETURN(ST_BACKEND);
    }
    live[K_PARAMS]++;
    *params = p;
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_params_add(nixl_capi_params_t params, const char *key, const char *value) {
    ENTER("params_add");
    if (!params || !key || !value) {
        RETURN(ST_INVALID_PARAM);
    }
    size_t used = strlen(params->text);
    snprintf(params->text + used, sizeof params->text - used, "%s%s=%s", used ? ";" : "", key, value);
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_destroy_params(nixl_capi_params_t params) {
    ENTER("destroy_params");
    if (!params) {
        RETURN(ST_INVALID_PARAM);
    }
    free(params);
    live[K_PARAMS]--;
    RETURN(ST_SUCCESS);
}

struct nixl_capi_mem_list_s { int types[2]; size_t n; };
typedef struct nixl_capi_mem_list_s *nixl_capi_mem_list_t;

/* The plugin's default parameters (none here) and memory types; -2 for a plugin that cannot be loaded. */
nixl_capi_status_t nixl_capi_get_plugin_params(nixl_capi_agent_t agent, const char *plugin, nixl_capi_mem_list_t *mems,
                                               nixl_capi_params_t *params) {
    ENTER("get_plugin_params");
    if (!agent || !plugin || !mems || !params) {
        RETURN(ST_INVALID_PARAM);
    }
    if (strcmp(plugin, "UCX") != 0) {
        RETURN(ST_BACKEND);
    }
    nixl_capi_mem_list_t m = calloc(1, sizeof *m);
    nixl_capi_params_t p = calloc(1, sizeof *p);
    if (!m || !p) {
        free(m);
        free(p);
        RETURN(ST_BACKEND);
    }
    m->n = 2; /* DRAM, VRAM */
    m->types[1] = 1;
    live[K_MEM_LIST]++;
    live[K_PARAMS]++;
    *mems = m;
    *params = p;
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_destroy_mem_list(nixl_capi_mem_list_t list) {
    ENTER("destroy_mem_list");
    if (!list) {
        RETURN(ST_INVALID_PARAM);
    }
    free(list);
    live[K_MEM_LIST]--;
    RETURN(ST_SUCCESS);
}

struct nixl_capi_backend_s { nixl_capi_agent_t agent; };
typedef struct nixl_capi_backend_s *nixl_capi_backend_t;

nixl_capi_status_t nixl_capi_create_backend(nixl_capi_agent_t agent, const char *plugin, nixl_capi_params_t params,
                                            nixl_capi_backend_t *backend) {
    ENTER("create_backend");
    if (!agent || !plugin || !params || !backend) {
        RETURN(ST_INVALID_PARAM);
    }
    snprintf(last_backend, sizeof last_backend, "%s:%s", plugin, params->text);
    if (strcmp(plugin, "UCX") != 0) {
        RETURN(ST_BACKEND); /* the wrapper maps every create_backend failure to -2 */
    }
    nixl_capi_backend_t b = calloc(1, sizeof *b);
    if (!b) {
        RETURN(ST_BACKEND);
    }
    b->agent = agent;
    agent->backends++; /* lives until the agent is destroyed, as in NIXL */
    live[K_BACKEND]++;
    *backend = b;
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_destroy_backend(nixl_capi_backend_t backend) {
    ENTER("destroy_backend");
    if (!backend) {
        RETURN(ST_INVALID_PARAM);
    }
    free(backend); /* the handle only */
    live[K_BACKEND]--;
    RETURN(ST_SUCCESS);
}

struct nixl_capi_opt_args_s { int unused; };
typedef struct nixl_capi_opt_args_s *nixl_capi_opt_args_t;

struct nixl_capi_notif_map_s { int unused; };
typedef struct nixl_capi_notif_map_s *nixl_capi_notif_map_t;

nixl_capi_status_t nixl_capi_create_notif_map(nixl_capi_notif_map_t *map) {
    ENTER("create_notif_map");
    if (!map) {
        RETURN(ST_INVALID_PARAM);
    }
    *map = calloc(1, sizeof **map);
    live[K_NOTIF_MAP]++;
    RETURN(*map ? ST_SUCCESS : ST_BACKEND);
}

nixl_capi_status_t nixl_capi_destroy_notif_map(nixl_capi_notif_map_t map) {
    ENTER("destroy_notif_map");
    if (!map) {
        RETURN(ST_INVALID_PARAM);
    }
    free(map);
    live[K_NOTIF_MAP]--;
    RETURN(ST_SUCCESS);
}

/* Progress for caller-driven agents: nothing is asynchronous here, so there are never notifications. */
nixl_capi_status_t nixl_capi_get_notifs(nixl_capi_agent_t agent, nixl_capi_notif_map_t map,
                                        nixl_capi_opt_args_t opt_args) {
    (void)opt_args;
    ENTER("get_notifs");
    RETURN(agent && map ? ST_SUCCESS : ST_INVALID_PARAM);
}

/* ------------------------------------------------------------------ registration */

nixl_capi_status_t nixl_capi_create_reg_dlist(int mem_type, nixl_capi_reg_dlist_t *dlist) {
    ENTER("create_reg_dlist");
    if (!dlist) {
        RETURN(ST_INVALID_PARAM);
    }
    nixl_capi_reg_dlist_t l = calloc(1, sizeof *l);
    if (!l) {
        RETURN(ST_BACKEND);
    }
    l->l.type = mem_type;
    live[K_REG_DLIST]++;
    *dlist = l;
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_reg_dlist_add_desc(nixl_capi_reg_dlist_t dlist, uintptr_t addr, size_t len,
                                                uint64_t dev_id, const void *metadata, size_t metadata_len) {
    (void)metadata;
    (void)metadata_len;
    ENTER("reg_dlist_add_desc");
    if (!dlist) {
        RETURN(ST_INVALID_PARAM);
    }
    RETURN(dl_add(&dlist->l, addr, len, dev_id));
}

nixl_capi_status_t nixl_capi_destroy_reg_dlist(nixl_capi_reg_dlist_t dlist) {
    ENTER("destroy_reg_dlist");
    if (!dlist) {
        RETURN(ST_INVALID_PARAM);
    }
    dl_free(&dlist->l);
    free(dlist);
    live[K_REG_DLIST]--;
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_register_mem(nixl_capi_agent_t agent, nixl_capi_reg_dlist_t dlist,
                                          nixl_capi_opt_args_t opt_args) {
    (void)opt_args;
    ENTER("register_mem");
    if (!agent || !dlist) {
        RETURN(ST_INVALID_PARAM);
    }
    if (agent->backends == 0) {
        RETURN(ST_BACKEND); /* no backend can register it */
    }
    if (dlist->l.n > 0) {
        snprintf(last_registration, sizeof last_registration, "type=%d dev=%llu addr=0x%llx len=%llu", dlist->l.type,
                 (unsigned long long)dlist->l.d[0].dev, (unsigned long long)dlist->l.d[0].addr,
                 (unsigned long long)dlist->l.d[0].len);
    }
    for (size_t i = 0; i < dlist->l.n; i++) {
        desc_t *d = &dlist->l.d[i];
        if (d->len == 0 || dl_add(&agent->regs, d->addr, d->len, d->dev) != ST_SUCCESS) {
            RETURN(ST_BACKEND);
        }
        live[K_REGISTERED]++;
    }
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_deregister_mem(nixl_capi_agent_t agent, nixl_capi_reg_dlist_t dlist,
                                            nixl_capi_opt_args_t opt_args) {
    (void)opt_args;
    ENTER("deregister_mem");
    if (!agent || !dlist) {
        RETURN(ST_INVALID_PARAM);
    }
    for (size_t i = 0; i < dlist->l.n; i++) {
        desc_t *d = &dlist->l.d[i];
        size_t j = 0;
        while (j < agent->regs.n && !(agent->regs.d[j].addr == d->addr && agent->regs.d[j].len == d->len)) {
            j++;
        }
        if (j == agent->regs.n) {
            RETURN(ST_BACKEND); /* not registered */
        }
        agent->regs.d[j] = agent->regs.d[--agent->regs.n];
        live[K_REGISTERED]--;
    }
    RETURN(ST_SUCCESS);
}

/* ------------------------------------------------------------------ metadata */

static const char MAGIC[8] = {'N', 'I', 'X', 'L', 'D', 'B', 'L', 1};

nixl_capi_status_t nixl_capi_get_local_md(nixl_capi_agent_t agent, void **data, size_t *len) {
    ENTER("get_local_md");
    if (!agent || !data || !len) {
        RETURN(ST_INVALID_PARAM);
    }
    uint32_t name_len = (uint32_t)strlen(agent->name);
    uint32_t n = (uint32_t)agent->regs.n;
    size_t size = 8 + 4 + name_len + 8 + 8 + 4 + (size_t)n * 28;
    unsigned char *b = malloc(size);
    if (!b) {
        RETURN(ST_BACKEND);
    }
    unsigned char *p = b;
    uint64_t pid = (uint64_t)getpid();
    memcpy(p, MAGIC, 8), p += 8;
    memcpy(p, &name_len, 4), p += 4;
    memcpy(p, agent->name, name_len), p += name_len;
    memcpy(p, &agent->uid, 8), p += 8;
    memcpy(p, &pid, 8), p += 8;
    memcpy(p, &n, 4), p += 4;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t type = (uint32_t)agent->regs.type;
        memcpy(p, &agent->regs.d[i].addr, 8), p += 8;
        memcpy(p, &agent->regs.d[i].len, 8), p += 8;
        memcpy(p, &agent->regs.d[i].dev, 8), p += 8;
        memcpy(p, &type, 4), p += 4;
    }
    *data = b; /* the caller frees it with free() */
    *len = size;
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_load_remote_md(nixl_capi_agent_t agent, const void *data, size_t len, char **agent_name) {
    ENTER("load_remote_md");
    if (!agent || !data || !len || !agent_name) {
        RETURN(ST_INVALID_PARAM);
    }
    const unsigned char *p = data, *end = p + len;
    uint32_t name_len, n;
    if (len < 12 || memcmp(p, MAGIC, 8) != 0) {
        RETURN(ST_BACKEND); /* not NIXL metadata: loadRemoteMD fails, the wrapper answers -2 */
    }
    p += 8;
    memcpy(&name_len, p, 4), p += 4;
    if ((size_t)(end - p) < (size_t)name_len + 20) {
        RETURN(ST_BACKEND);
    }
    remote_t *r = calloc(1, sizeof *r);
    if (!r || !(r->name = malloc(name_len + 1))) {
        free(r);
        RETURN(ST_BACKEND);
    }
    memcpy(r->name, p, name_len), p += name_len;
    r->name[name_len] = 0;
    memcpy(&r->uid, p, 8), p += 8;
    memcpy(&r->pid, p, 8), p += 8;
    memcpy(&n, p, 4), p += 4;
    if ((size_t)(end - p) != (size_t)n * 28 || strcmp(r->name, agent->name) == 0) {
        free_remote(r); /* truncated, or an agent's own metadata */
        RETURN(ST_BACKEND);
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t addr, l, dev;
        memcpy(&addr, p, 8), p += 8;
        memcpy(&l, p, 8), p += 8;
        memcpy(&dev, p, 8), p += 8;
        p += 4;
        dl_add(&r->regs, addr, l, dev);
    }
    char *copy = strdup(r->name);
    if (!copy) {
        free_remote(r);
        RETURN(ST_BACKEND);
    }
    /* Loading an agent again replaces what was known of it. */
    for (remote_t **q = &agent->remotes; *q; q = &(*q)->next) {
        if (strcmp((*q)->name, r->name) == 0) {
            remote_t *old = *q;
            *q = old->next;
            free_remote(old);
            break;
        }
    }
    r->next = agent->remotes;
    agent->remotes = r;
    *agent_name = copy; /* the caller frees it with free() */
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_invalidate_remote_md(nixl_capi_agent_t agent, const char *remote_agent) {
    ENTER("invalidate_remote_md");
    if (!agent || !remote_agent) {
        RETURN(ST_INVALID_PARAM);
    }
    for (remote_t **q = &agent->remotes; *q; q = &(*q)->next) {
        if (strcmp((*q)->name, remote_agent) == 0) {
            remote_t *old = *q;
            *q = old->next;
            free_remote(old);
            RETURN(ST_SUCCESS);
        }
    }
    RETURN(ST_NOT_FOUND);
}

/* ------------------------------------------------------------------ transfers */

nixl_capi_status_t nixl_capi_create_xfer_dlist(int mem_type, nixl_capi_xfer_dlist_t *dlist) {
    ENTER("create_xfer_dlist");
    if (!dlist) {
        RETURN(ST_INVALID_PARAM);
    }
    nixl_capi_xfer_dlist_t l = calloc(1, sizeof *l);
    if (!l) {
        RETURN(ST_BACKEND);
    }
    l->l.type = mem_type;
    live[K_XFER_DLIST]++;
    *dlist = l;
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_xfer_dlist_add_desc(nixl_capi_xfer_dlist_t dlist, uintptr_t addr, size_t len,
                                                 uint64_t dev_id) {
    ENTER("xfer_dlist_add_desc");
    if (!dlist) {
        RETURN(ST_INVALID_PARAM);
    }
    RETURN(dl_add(&dlist->l, addr, len, dev_id));
}

nixl_capi_status_t nixl_capi_destroy_xfer_dlist(nixl_capi_xfer_dlist_t dlist) {
    ENTER("destroy_xfer_dlist");
    if (!dlist) {
        RETURN(ST_INVALID_PARAM);
    }
    dl_free(&dlist->l);
    free(dlist);
    live[K_XFER_DLIST]--;
    RETURN(ST_SUCCESS);
}

/* The regions a transfer may touch at agent_name: the agent's own for "" or its own name, else the loaded ones. */
static const dlist_t *known_regions(nixl_capi_agent_t agent, const char *agent_name) {
    if (agent_name[0] == 0 || strcmp(agent_name, agent->name) == 0) {
        return &agent->regs;
    }
    remote_t *r = find_remote(agent, agent_name);
    return r ? &r->regs : NULL;
}

nixl_capi_status_t nixl_capi_check_remote_md(nixl_capi_agent_t agent, const char *remote_name,
                                             nixl_capi_xfer_dlist_t descs) {
    ENTER("check_remote_md");
    if (!agent || !remote_name) {
        RETURN(ST_INVALID_PARAM);
    }
    remote_t *r = find_remote(agent, remote_name);
    if (!r || (descs && !all_covered(&r->regs, &descs->l))) {
        RETURN(ST_NOT_FOUND);
    }
    RETURN(ST_SUCCESS);
}

struct nixl_capi_xfer_dlist_handle_s {
    nixl_capi_agent_t agent;
    char *agent_name; /* "" for the initiator's own side */
    dlist_t l;
};
typedef struct nixl_capi_xfer_dlist_handle_s *nixl_capi_xfer_dlist_handle_t;

nixl_capi_status_t nixl_capi_prep_xfer_dlist(nixl_capi_agent_t agent, const char *agent_name,
                                             nixl_capi_xfer_dlist_t descs, nixl_capi_xfer_dlist_handle_t *handle,
                                             nixl_capi_opt_args_t opt_args) {
    (void)opt_args;
    ENTER("prep_xfer_dlist");
    if (!agent || !agent_name || !descs || !handle) {
        RETURN(ST_INVALID_PARAM);
    }
    {
        /* Keep the previous list and this one: a request is made of a local and a remote list. */
        memcpy(prev_xfer, last_xfer, sizeof prev_xfer);
        snprintf(last_xfer, sizeof last_xfer, "agent=%.100s type=%d dev=%llu count=%zu",
                 agent_name[0] ? agent_name : "(local)", descs->l.type,
                 descs->l.n ? (unsigned long long)descs->l.d[0].dev : 0ULL, descs->l.n);
    }
    const dlist_t *regs = known_regions(agent, agent_name);
    if (!regs) {
        RETURN(ST_NOT_FOUND);
    }
    if (!all_covered(regs, &descs->l)) {
        RETURN(ST_BACKEND);
    }
    nixl_capi_xfer_dlist_handle_t h = calloc(1, sizeof *h);
    if (!h || !(h->agent_name = strdup(agent_name)) || dl_copy(&h->l, &descs->l) != ST_SUCCESS) {
        if (h) {
            free(h->agent_name);
        }
        free(h);
        RETURN(ST_BACKEND);
    }
    h->agent = agent;
    live[K_DLIST_HANDLE]++;
    *handle = h;
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_release_xfer_dlist_handle(nixl_capi_agent_t agent, nixl_capi_xfer_dlist_handle_t handle) {
    ENTER("release_xfer_dlist_handle");
    if (!agent || !handle || handle->agent != agent) {
        RETURN(ST_INVALID_PARAM);
    }
    dl_free(&handle->l);
    free(handle->agent_name);
    free(handle);
    live[K_DLIST_HANDLE]--;
    RETURN(ST_SUCCESS);
}

enum { REQ_IDLE, REQ_POSTED, REQ_DONE };

struct nixl_capi_xfer_req_s {
    nixl_capi_agent_t agent;
    int op;
    dlist_t local, remote;
    char *remote_name;
    int phase;
    int result;
    long polls_left;
    bool released;
};
typedef struct nixl_capi_xfer_req_s *nixl_capi_xfer_req_t;

static int new_req(nixl_capi_agent_t agent, int op, const dlist_t *local, const int *li, size_t nl,
                   const dlist_t *remote, const int *ri, size_t nr, const char *remote_name,
                   nixl_capi_xfer_req_t *out) {
    if ((op != 0 && op != 1) || nl != nr) {
        return ST_BACKEND;
    }
    nixl_capi_xfer_req_t r = calloc(1, sizeof *r);
    if (!r || !(r->remote_name = strdup(remote_name))) {
        free(r);
        return ST_BACKEND;
    }
    r->agent = agent;
    r->op = op;
    int st = ST_SUCCESS;
    for (size_t i = 0; i < nl && st == ST_SUCCESS; i++) {
        size_t a = li ? (size_t)li[i] : i, b = ri ? (size_t)ri[i] : i;
        if ((li && (li[i] < 0 || a >= local->n)) || (ri && (ri[i] < 0 || b >= remote->n))
            || local->d[a].len != remote->d[b].len) {
            st = ST_BACKEND;
            break;
        }
        st = dl_add(&r->local, local->d[a].addr, local->d[a].len, local->d[a].dev);
        if (st == ST_SUCCESS) {
            st = dl_add(&r->remote, remote->d[b].addr, remote->d[b].len, remote->d[b].dev);
        }
    }
    if (st != ST_SUCCESS) {
        dl_free(&r->local);
        dl_free(&r->remote);
        free(r->remote_name);
        free(r);
        return st;
    }
    live[K_XFER_REQ]++;
    *out = r;
    return ST_SUCCESS;
}

nixl_capi_status_t nixl_capi_create_xfer_req(nixl_capi_agent_t agent, int operation, nixl_capi_xfer_dlist_t local,
                                             nixl_capi_xfer_dlist_t remote, const char *remote_agent,
                                             nixl_capi_xfer_req_t *req, nixl_capi_opt_args_t opt_args) {
    (void)opt_args;
    ENTER("create_xfer_req");
    if (!agent || !local || !remote || !remote_agent || !req) {
        RETURN(ST_INVALID_PARAM);
    }
    const dlist_t *regs = known_regions(agent, remote_agent);
    if (!regs || remote_agent[0] == 0 || local->l.n != remote->l.n || !all_covered(&agent->regs, &local->l)
        || !all_covered(regs, &remote->l)) {
        RETURN(ST_BACKEND); /* the wrapper maps every create_xfer_req failure to -2 */
    }
    RETURN(new_req(agent, operation, &local->l, NULL, local->l.n, &remote->l, NULL, remote->l.n, remote_agent, req));
}

nixl_capi_status_t nixl_capi_make_xfer_req(nixl_capi_agent_t agent, int operation,
                                           nixl_capi_xfer_dlist_handle_t local, const int *local_idx, size_t n_local,
                                           nixl_capi_xfer_dlist_handle_t remote, const int *remote_idx,
                                           size_t n_remote, nixl_capi_xfer_req_t *req, nixl_capi_opt_args_t opt_args) {
    (void)opt_args;
    ENTER("make_xfer_req");
    if (!agent || !local || !remote || !req || local->agent != agent || remote->agent != agent
        || local->agent_name[0] != 0 || remote->agent_name[0] == 0) {
        RETURN(ST_INVALID_PARAM);
    }
    RETURN(new_req(agent, operation, &local->l, local_idx, n_local, &remote->l, remote_idx, n_remote,
                   remote->agent_name, req));
}

/* Moves the bytes of a transfer with an agent of another process, which must still be alive. Lock held. */
static int complete_remote_process(nixl_capi_xfer_req_t r, pid_t pid) {
    if (!all_covered(&r->agent->regs, &r->local)) {
        return ST_BACKEND;
    }
    enum { BATCH = 512 };
    struct iovec l[BATCH], m[BATCH];
    for (size_t i = 0; i < r->local.n;) {
        size_t k = 0, bytes = 0;
        for (; k < BATCH && i + k < r->local.n; k++) {
            l[k] = (struct iovec){(void *)(uintptr_t)r->local.d[i + k].addr, r->local.d[i + k].len};
            m[k] = (struct iovec){(void *)(uintptr_t)r->remote.d[i + k].addr, r->remote.d[i + k].len};
            bytes += r->local.d[i + k].len;
        }
        ssize_t n = r->op == 0 ? process_vm_readv(pid, l, k, m, k, 0) : process_vm_writev(pid, l, k, m, k, 0);
        if (n < 0 || (size_t)n != bytes) {
            return ST_BACKEND; /* the peer died, or its memory is gone */
        }
        i += k;
    }
    return ST_SUCCESS;
}

/* Moves the bytes of a transfer, checking both sides' current registrations. Lock held. */
static int complete(nixl_capi_xfer_req_t r) {
    nixl_capi_agent_t target;
    if (strcmp(r->remote_name, r->agent->name) == 0) {
        target = r->agent;
    } else {
        remote_t *rm = find_remote(r->agent, r->remote_name);
        if (!rm) {
            return ST_BACKEND;
        }
        if (rm->pid != (uint64_t)getpid()) {
            return complete_remote_process(r, (pid_t)rm->pid);
        }
        if (!(target = live_agent(rm->uid))) {
            return ST_BACKEND; /* the peer is gone */
        }
    }
    if ((!serve_deregistered && !all_covered(&target->regs, &r->remote))
        || !all_covered(&r->agent->regs, &r->local)) {
        return ST_BACKEND; /* remote access error: memory no longer registered */
    }
    for (size_t i = 0; i < r->local.n; i++) {
        void *l = (void *)(uintptr_t)r->local.d[i].addr, *m = (void *)(uintptr_t)r->remote.d[i].addr;
        if (r->op == 0) {
            memmove(l, m, r->local.d[i].len);
        } else {
            memmove(m, l, r->local.d[i].len);
        }
    }
    return ST_SUCCESS;
}

nixl_capi_status_t nixl_capi_post_xfer_req(nixl_capi_agent_t agent, nixl_capi_xfer_req_t req,
                                           nixl_capi_opt_args_t opt_args) {
    (void)opt_args;
    ENTER("post_xfer_req");
    if (!agent || !req || req->released || req->agent != agent) {
        RETURN(ST_INVALID_PARAM);
    }
    if (req->phase == REQ_POSTED) {
        RETURN(ST_BACKEND); /* re-posting an active request */
    }
    req->phase = REQ_POSTED;
    req->polls_left = in_prog_polls;
    if (!stuck && req->polls_left <= 0) {
        req->phase = REQ_DONE;
        req->result = complete(req);
        RETURN(req->result);
    }
    RETURN(ST_IN_PROG);
}

nixl_capi_status_t nixl_capi_get_xfer_status(nixl_capi_agent_t agent, nixl_capi_xfer_req_t req) {
    ENTER("get_xfer_status");
    if (!agent || !req || req->released || req->agent != agent) {
        RETURN(ST_INVALID_PARAM);
    }
    if (req->phase == REQ_IDLE) {
        RETURN(ST_INVALID_STATE);
    }
    if (req->phase == REQ_POSTED) {
        if (stuck || --req->polls_left > 0) {
            RETURN(ST_IN_PROG);
        }
        req->phase = REQ_DONE;
        req->result = complete(req);
    }
    RETURN(req->result);
}

nixl_capi_status_t nixl_capi_release_xfer_req(nixl_capi_agent_t agent, nixl_capi_xfer_req_t req) {
    ENTER("release_xfer_req");
    if (!agent || !req || req->released) {
        RETURN(ST_INVALID_PARAM);
    }
    req->released = true; /* an active transfer is aborted: its bytes never move */
    dl_free(&req->local);
    dl_free(&req->remote);
    RETURN(ST_SUCCESS);
}

nixl_capi_status_t nixl_capi_destroy_xfer_req(nixl_capi_xfer_req_t req) {
    ENTER("destroy_xfer_req");
    if (!req) {
        RETURN(ST_INVALID_PARAM);
    }
    if (!req->released) {
        RETURN(ST_INVALID_STATE); /* release it first */
    }
    free(req->remote_name);
    free(req);
    live[K_XFER_REQ]--;
    RETURN(ST_SUCCESS);
}
