// Package docs checks user documentation against the product it describes.
package docs
