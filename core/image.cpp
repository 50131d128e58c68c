// PLACEHOLDER: the OpenCV wrapper (core/image.h) is being written.
extern "C" int rv_image_placeholder_(void);
extern "C" int rv_image_placeholder_(void) { return 0; }
