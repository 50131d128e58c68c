/* Class names, COCO category ids and palettes. The name tuples and the ADE20K palette
 * are the official datasets' (mmdet CocoDataset.CLASSES, mmseg ADE20KDataset.CLASSES and
 * PALETTE, as also stored in checkpoint meta); the COCO palette is rv_palette_color(i). */
#include "datasets/classes.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>

const char *const rv_coco_classes[RV_COCO_NUM_CLASSES] = {
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat",
    "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack",
    "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball",
    "kite", "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket",
    "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair",
    "couch", "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse",
    "remote", "keyboard", "cell phone", "microwave", "oven", "toaster", "sink",
    "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier",
    "toothbrush",
};

/* COCO json category_id of mmdet label i (CocoDataset.cat_ids, 1..90 with gaps). */
const int rv_coco_category_ids[RV_COCO_NUM_CLASSES] = {
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27,
    28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52,
    53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 67, 70, 72, 73, 74, 75, 76, 77, 78,
    79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90,
};

/* rv_palette_color(i) for i = 0..79 (test_classes checks they agree). */
const unsigned char rv_coco_palette[RV_COCO_NUM_CLASSES][3] = {
    {242, 172, 36}, {114, 61, 204}, {109, 242, 119}, {204, 31, 68}, {73, 159, 242},
    {181, 204, 92}, {224, 36, 242}, {61, 204, 149}, {242, 152, 109}, {36, 31, 204},
    {116, 242, 73}, {204, 92, 153}, {36, 210, 242}, {204, 185, 61}, {186, 109, 242},
    {31, 204, 80}, {242, 73, 74}, {92, 126, 204}, {158, 242, 36}, {204, 61, 187},
    {109, 242, 219}, {204, 123, 31}, {113, 73, 242}, {98, 204, 92}, {242, 36, 107},
    {61, 152, 204}, {232, 242, 109}, {166, 31, 204}, {73, 242, 156}, {204, 114, 92},
    {36, 56, 242}, {116, 204, 61}, {242, 109, 199}, {31, 199, 204}, {242, 198, 73},
    {142, 92, 204}, {36, 242, 68}, {204, 61, 81}, {109, 166, 242}, {155, 204, 31},
    {240, 73, 242}, {92, 204, 170}, {242, 120, 36}, {77, 61, 204}, {133, 242, 109},
    {204, 31, 112}, {73, 202, 242}, {204, 198, 92}, {171, 36, 242}, {61, 204, 113},
    {242, 118, 109}, {31, 69, 204}, {160, 242, 73}, {204, 92, 182}, {36, 242, 222},
    {204, 148, 61}, {152, 109, 242}, {31, 204, 35}, {242, 73, 117}, {92, 154, 204},
    {211, 242, 36}, {184, 61, 204}, {109, 242, 185}, {204, 79, 31}, {73, 75, 242},
    {126, 204, 92}, {242, 36, 160}, {61, 188, 204}, {242, 218, 109}, {122, 31, 204},
    {73, 242, 112}, {204, 92, 98}, {36, 108, 242}, {153, 204, 61}, {242, 109, 233},
    {31, 204, 165}, {242, 155, 73}, {113, 92, 204}, {57, 242, 36}, {204, 61, 117},
};

const char *const rv_ade20k_classes[RV_ADE20K_NUM_CLASSES] = {
    "wall", "building", "sky", "floor", "tree", "ceiling", "road", "bed ", "windowpane",
    "grass", "cabinet", "sidewalk", "person", "earth", "door", "table", "mountain", "plant",
    "curtain", "chair", "car", "water", "painting", "sofa", "shelf", "house", "sea", "mirror",
    "rug", "field", "armchair", "seat", "fence", "desk", "rock", "wardrobe", "lamp",
    "bathtub", "railing", "cushion", "base", "box", "column", "signboard", "chest of drawers",
    "counter", "sand", "sink", "skyscraper", "fireplace", "refrigerator", "grandstand",
    "path", "stairs", "runway", "case", "pool table", "pillow", "screen door", "stairway",
    "river", "bridge", "bookcase", "blind", "coffee table", "toilet", "flower", "book",
    "hill", "bench", "countertop", "stove", "palm", "kitchen island", "computer",
    "swivel chair", "boat", "bar", "arcade machine", "hovel", "bus", "towel", "light",
    "truck", "tower", "chandelier", "awning", "streetlight", "booth", "television receiver",
    "airplane", "dirt track", "apparel", "pole", "land", "bannister", "escalator", "ottoman",
    "bottle", "buffet", "poster", "stage", "van", "ship", "fountain", "conveyer belt",
    "canopy", "washer", "plaything", "swimming pool", "stool", "barrel", "basket",
    "waterfall", "tent", "bag", "minibike", "cradle", "oven", "ball", "food", "step", "tank",
    "trade name", "microwave", "pot", "animal", "bicycle", "lake", "dishwasher", "screen",
    "blanket", "sculpture", "hood", "sconce", "vase", "traffic light", "tray", "ashcan",
    "fan", "pier", "crt screen", "plate", "monitor", "bulletin board", "shower", "radiator",
    "glass", "clock", "flag",
};

/* mmseg ADE20KDataset.PALETTE (RGB). */
const unsigned char rv_ade20k_palette[RV_ADE20K_NUM_CLASSES][3] = {
    {120, 120, 120}, {180, 120, 120}, {6, 230, 230}, {80, 50, 50}, {4, 200, 3},
    {120, 120, 80}, {140, 140, 140}, {204, 5, 255}, {230, 230, 230}, {4, 250, 7},
    {224, 5, 255}, {235, 255, 7}, {150, 5, 61}, {120, 120, 70}, {8, 255, 51}, {255, 6, 82},
    {143, 255, 140}, {204, 255, 4}, {255, 51, 7}, {204, 70, 3}, {0, 102, 200}, {61, 230, 250},
    {255, 6, 51}, {11, 102, 255}, {255, 7, 71}, {255, 9, 224}, {9, 7, 230}, {220, 220, 220},
    {255, 9, 92}, {112, 9, 255}, {8, 255, 214}, {7, 255, 224}, {255, 184, 6}, {10, 255, 71},
    {255, 41, 10}, {7, 255, 255}, {224, 255, 8}, {102, 8, 255}, {255, 61, 6}, {255, 194, 7},
    {255, 122, 8}, {0, 255, 20}, {255, 8, 41}, {255, 5, 153}, {6, 51, 255}, {235, 12, 255},
    {160, 150, 20}, {0, 163, 255}, {140, 140, 140}, {250, 10, 15}, {20, 255, 0}, {31, 255, 0},
    {255, 31, 0}, {255, 224, 0}, {153, 255, 0}, {0, 0, 255}, {255, 71, 0}, {0, 235, 255},
    {0, 173, 255}, {31, 0, 255}, {11, 200, 200}, {255, 82, 0}, {0, 255, 245}, {0, 61, 255},
    {0, 255, 112}, {0, 255, 133}, {255, 0, 0}, {255, 163, 0}, {255, 102, 0}, {194, 255, 0},
    {0, 143, 255}, {51, 255, 0}, {0, 82, 255}, {0, 255, 41}, {0, 255, 173}, {10, 0, 255},
    {173, 255, 0}, {0, 255, 153}, {255, 92, 0}, {255, 0, 255}, {255, 0, 245}, {255, 0, 102},
    {255, 173, 0}, {255, 0, 20}, {255, 184, 184}, {0, 31, 255}, {0, 255, 61}, {0, 71, 255},
    {255, 0, 204}, {0, 255, 194}, {0, 255, 82}, {0, 10, 255}, {0, 112, 255}, {51, 0, 255},
    {0, 194, 255}, {0, 122, 255}, {0, 255, 163}, {255, 153, 0}, {0, 255, 10}, {255, 112, 0},
    {143, 255, 0}, {82, 0, 255}, {163, 255, 0}, {255, 235, 0}, {8, 184, 170}, {133, 0, 255},
    {0, 255, 92}, {184, 0, 255}, {255, 0, 31}, {0, 184, 255}, {0, 214, 255}, {255, 0, 112},
    {92, 255, 0}, {0, 224, 255}, {112, 224, 255}, {70, 184, 160}, {163, 0, 255},
    {153, 0, 255}, {71, 255, 0}, {255, 0, 163}, {255, 204, 0}, {255, 0, 143}, {0, 255, 235},
    {133, 255, 0}, {255, 0, 235}, {245, 0, 255}, {255, 0, 122}, {255, 245, 0}, {10, 190, 212},
    {214, 255, 0}, {0, 204, 255}, {20, 0, 255}, {255, 255, 0}, {0, 153, 255}, {0, 41, 255},
    {0, 255, 204}, {41, 0, 255}, {41, 255, 0}, {173, 0, 255}, {0, 245, 255}, {71, 0, 255},
    {122, 0, 255}, {0, 255, 184}, {0, 92, 255}, {184, 255, 0}, {0, 133, 255}, {255, 214, 0},
    {25, 194, 194}, {102, 255, 0}, {92, 0, 255},
};

int rv_coco_label_of_category(int category_id) {
  for (int i = 0; i < RV_COCO_NUM_CLASSES; i++)
    if (rv_coco_category_ids[i] == category_id) return i;
  return -1;
}

/* HSV colour wheel walked in golden-ratio steps (adjacent indices get far-apart hues),
 * with saturation and value alternating so that near hues still differ. */
void rv_palette_color(int index, unsigned char rgb[3]) {
  double h = fmod(0.11 + (double)(index < 0 ? -index : index) * 0.6180339887498949, 1.0) * 6.0;
  double s = (index % 3 == 0) ? 0.85 : (index % 3 == 1) ? 0.7 : 0.55;
  double v = (index % 2 == 0) ? 0.95 : 0.8;
  int sector = (int)h;
  double f = h - sector, p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  double r, g, b;
  switch (sector) {
  case 0: r = v; g = t; b = p; break;
  case 1: r = q; g = v; b = p; break;
  case 2: r = p; g = v; b = t; break;
  case 3: r = p; g = q; b = v; break;
  case 4: r = t; g = p; b = v; break;
  default: r = v; g = p; b = q; break;
  }
  rgb[0] = (unsigned char)(r * 255 + 0.5);
  rgb[1] = (unsigned char)(g * 255 + 0.5);
  rgb[2] = (unsigned char)(b * 255 + 0.5);
}

static int eq_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
  return *a == *b;
}

const rv_class_set *rv_class_set_find(const char *name) {
  static const rv_class_set sets[] = {
      {"coco", RV_COCO_NUM_CLASSES, rv_coco_classes, rv_coco_palette},
      {"ade20k", RV_ADE20K_NUM_CLASSES, rv_ade20k_classes, rv_ade20k_palette},
      {"imagenet", RV_IMAGENET_NUM_CLASSES, rv_imagenet_classes, NULL},
  };
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
    if (eq_nocase(name, sets[i].name)) return &sets[i];
  return NULL;
}
