/* A Python extension module that needs liba.so (RUNPATH $ORIGIN/../lib2), and reports where the
   loader says its code lives: dladdr of its own function and of liba's, and every object whose
   name is under the directory given (dl_iterate_phdr). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <link.h>
#include <string.h>

int a_value(void);

static PyObject* value(PyObject* self, PyObject* args) {
  (void)self;
  (void)args;
  return PyLong_FromLong(a_value());
}

static int collect(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  PyObject* pair = (PyObject*)data;
  const char* under = PyUnicode_AsUTF8(PyTuple_GetItem(pair, 0));
  if (info->dlpi_name != NULL && strncmp(info->dlpi_name, under, strlen(under)) == 0) {
    PyObject* name = PyUnicode_FromString(info->dlpi_name);
    PyList_Append(PyTuple_GetItem(pair, 1), name);
    Py_DECREF(name);
  }
  return 0;
}

static PyObject* where(PyObject* self, PyObject* args) {
  (void)self;
  const char* under = NULL;
  if (!PyArg_ParseTuple(args, "s", &under)) return NULL;
  Dl_info own, dep;
  if (dladdr((void*)&value, &own) == 0 || dladdr((void*)&a_value, &dep) == 0) {
    PyErr_SetString(PyExc_OSError, "dladdr failed");
    return NULL;
  }
  PyObject* pair = Py_BuildValue("(sN)", under, PyList_New(0));
  dl_iterate_phdr(collect, pair);
  PyObject* result = Py_BuildValue("(ssO)", own.dli_fname, dep.dli_fname, PyTuple_GetItem(pair, 1));
  Py_DECREF(pair);
  return result;
}

static PyMethodDef methods[] = {{"value", value, METH_NOARGS, "a_value() through liba.so"},
                                {"where", where, METH_VARARGS, "dladdr and dl_iterate_phdr names"},
                                {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "lplext", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_lplext(void) {
  return PyModule_Create(&module);
}
