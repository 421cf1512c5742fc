/* Run a model exported by `dlc export` from C: inputs from .npy or raw files, each output's
 * shape and checksum printed (and, with -o DIR, its raw bytes written to DIR/NAME.bin, characters
 * other than letters, digits, '.' and '-' in NAME written as '_').
 *
 *   cc -O2 -DMODEL=mlp -include OUT/mlp.h run_model.c -LOUT -lmlp -Wl,-rpath,OUT -o run_mlp
 *   ./run_mlp input.npy            (or raw little-endian bytes of the input's exact size)
 *
 * MODEL is the export's NAME (the C prefix of its functions); see README.md. A model exported
 * for several input shapes (dlc export --specialize) takes .npy inputs: their shapes pick the
 * specialization, whose output shapes NAME_output_shape gives before the run.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MODEL
#error "compile with -DMODEL=NAME -include DIR/NAME.h"
#endif
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define API(f) CAT(MODEL, f)
typedef API(tensor) tensor;

static const size_t itemsizes[] = {0, 2, 4, 8, 1, 1, 2, 4, 8, 1, 2, 4, 8};
static const char *const npy_types[] = {"", "f2", "f4", "f8", "b1", "i1", "i2", "i4", "i8",
                                        "u1", "u2", "u4", "u8"};

static size_t bytes_of(const tensor *spec) {
    size_t n = itemsizes[spec->dtype];
    for (int32_t i = 0; i < spec->rank; ++i) n *= (size_t)spec->shape[i];
    return n;
}

/* the shape of a .npy header ("'shape': (1, 128), ..."), written to spec->shape when it has
   the spec's rank and its fixed sizes (a size of -1, dynamic, takes the file's) */
static void npy_shape(const char *path, const char *header, tensor *spec) {
    const char *at = strstr(header, "'shape':");
    at = at ? strchr(at, '(') : 0;
    int64_t *shape = calloc((size_t)spec->rank + 1, sizeof *shape);
    int32_t rank = 0;
    while (at && *++at && *at != ')') {
        if (*at == ' ' || *at == ',') continue;
        long long size = strtoll(at, (char **)&at, 10);
        if (rank < spec->rank) shape[rank] = size;
        ++rank;
        --at;
    }
    for (int32_t i = 0; rank == spec->rank && i < rank; ++i)
        if (spec->shape[i] >= 0 && spec->shape[i] != shape[i]) rank = -1;
    if (!at || rank != spec->rank) {
        fprintf(stderr, "%s: not an array of the input's rank %d and fixed sizes\n", path,
                (int)spec->rank);
        exit(2);
    }
    spec->shape = shape;
}

/* the data of a .npy (version 1-3, C order, the input's dtype) or of a raw file (of an input
   without dynamic sizes) */
static void *read_input(const char *path, tensor *spec) {
    FILE *file = fopen(path, "rb");
    if (!file) { perror(path); exit(2); }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *all = malloc((size_t)size + 1);
    if (!all || fread(all, 1, (size_t)size, file) != (size_t)size) { perror(path); exit(2); }
    fclose(file);
    char *data = all;
    size_t length = (size_t)size;
    if (size >= 10 && memcmp(all, "\x93NUMPY", 6) == 0) {
        size_t header = all[6] == 1 ? (size_t)(uint8_t)all[8] | (size_t)(uint8_t)all[9] << 8
                                    : (size_t)(uint8_t)all[8] | (size_t)(uint8_t)all[9] << 8
                                      | (size_t)(uint8_t)all[10] << 16
                                      | (size_t)(uint8_t)all[11] << 24;
        size_t start = (all[6] == 1 ? 10 : 12) + header;
        all[start - 1] = 0;
        if (!strstr(all + 10, npy_types[spec->dtype]) || strstr(all + 10, "True")) {
            fprintf(stderr, "%s: not a C-order array of dtype %s\n", path,
                    npy_types[spec->dtype]);
            exit(2);
        }
        data = all + start;
        length = (size_t)size - start;
        npy_shape(path, all + 10, spec);
    }
    for (int32_t i = 0; i < spec->rank; ++i)
        if (spec->shape[i] < 0) {
            fprintf(stderr, "%s: a raw file for an input with dynamic sizes: give a .npy\n",
                    path);
            exit(2);
        }
    if (length != bytes_of(spec)) {
        fprintf(stderr, "%s: %zu bytes of data, the input needs %zu\n", path, length,
                bytes_of(spec));
        exit(2);
    }
    void *copy = malloc(length);
    memcpy(copy, data, length);
    free(all);
    return copy;
}

static double checksum(const tensor *t) {
    size_t n = bytes_of(t) / itemsizes[t->dtype];
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
        switch (t->dtype) {
        case 2: sum += ((const float *)t->data)[i]; break;
        case 3: sum += ((const double *)t->data)[i]; break;
        case 7: sum += ((const int32_t *)t->data)[i]; break;
        case 8: sum += (double)((const int64_t *)t->data)[i]; break;
        default: sum += ((const uint8_t *)t->data)[i * itemsizes[t->dtype]]; break;
        }
    }
    return sum;
}

int main(int argc, char **argv) {
    const char *out_dir = 0;
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "-o") == 0) { out_dir = argv[2]; first = 3; }
    size_t n_in = API(num_inputs)(), n_out = API(num_outputs)();
    if ((size_t)(argc - first) != n_in) {
        fprintf(stderr, "usage: %s [-o DIR] INPUT.npy|INPUT.raw x %zu\n", argv[0], n_in);
        return 2;
    }
    const char *message;
    API(session) *session;
    int code = API(session_create)(&session, &message);
    if (code) { fprintf(stderr, "error %d: %s\n", code, message); return 1; }
    tensor *inputs = calloc(n_in + 1, sizeof *inputs), *outputs = calloc(n_out + 1, sizeof *outputs);
    const char **names = calloc(n_out + 1, sizeof *names);
    for (size_t i = 0; i < n_in; ++i) {
        API(input)(i, &inputs[i], 0);
        inputs[i].data = read_input(argv[first + (int)i], &inputs[i]);
    }
    for (size_t i = 0; i < n_out; ++i) {
        API(output)(i, &outputs[i], &names[i]);
        /* (several specializations: the output shapes of the one for these inputs) */
        if (API(num_specializations)() > 1 &&
            (code = API(output_shape)(session, inputs, n_in, i, &outputs[i]))) {
            fprintf(stderr, "error %d: %s\n", code, API(error_message)(session));
            return 1;
        }
        outputs[i].data = malloc(bytes_of(&outputs[i]) + 1);
    }
    code = API(run)(session, inputs, n_in, outputs, n_out);
    if (code) { fprintf(stderr, "error %d: %s\n", code, API(error_message)(session)); return 1; }
    for (size_t i = 0; i < n_out; ++i) {
        printf("%s: %s[", names[i], npy_types[outputs[i].dtype]);
        for (int32_t d = 0; d < outputs[i].rank; ++d)
            printf("%s%lld", d ? ", " : "", (long long)outputs[i].shape[d]);
        printf("] checksum %.9g\n", checksum(&outputs[i]));
        if (out_dir) {
            char path[4096];
            int at = snprintf(path, sizeof path, "%s/", out_dir);
            for (const char *c = names[i]; *c && at < (int)sizeof path - 5; ++c)  /* a/b -> a_b */
                path[at++] = (isalnum((unsigned char)*c) || *c == '.' || *c == '-') ? *c : '_';
            strcpy(path + at, ".bin");
            FILE *file = fopen(path, "wb");
            if (!file || fwrite(outputs[i].data, 1, bytes_of(&outputs[i]), file)
                             != bytes_of(&outputs[i])) { perror(path); return 2; }
            fclose(file);
        }
    }
    API(session_destroy)(session);
    return 0;
}
